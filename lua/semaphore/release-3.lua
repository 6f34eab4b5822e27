--[[
  Releases a lease of a semaphore: its permits come free, and their number is published.

  Input:
    KEYS[1] semaphore key: hash of "limit", "held" and "<owner>" -> permits of that lease
    KEYS[2] leases key: zset of owner field -> lease end, Redis TIME in milliseconds
    KEYS[3] release channel (declared as a key so sharded pub/sub can use it)
    ARGV[1] owner field: "<clientId>:<leaseId>"
    ARGV[2] publish command: "publish" or "spublish"

  Output: an integer
    -1   the owner holds no live lease here (it ended, or was never taken)
    n>=1 released: the lease's n permits came free; n plus the permits of leases pruned on
         the way were published on the channel (the message is that number)

  Leases that ended are pruned; when no lease is left, both keys are deleted.
]]
local semKey, leasesKey, channel = KEYS[1], KEYS[2], KEYS[3]
local owner, publishCommand = ARGV[1], ARGV[2]
local rcall = redis.call

-- @include prune

local state = rcall('HMGET', semKey, 'held', owner)
local expired, freed = ended()
local held = math.max(0, tonumber(state[1] or '0') - freed)
local permits = tonumber(state[2])
-- A lease past its end is gone, pruned or not: its permits are among those freed already.
for _, gone in ipairs(expired) do
  if gone == owner then
    permits = nil
  end
end

if not permits then
  if freed > 0 then
    rcall(publishCommand, channel, freed)
    prune(expired)
    if held > 0 then
      rcall('HSET', semKey, 'held', string.format('%d', held))
    else
      rcall('DEL', semKey, leasesKey)
    end
  end
  return -1
end
-- Publish first: Redis checks ACLs per command and does not roll a script back, so a user who
-- may not publish fails here with nothing changed. Nobody hears it before the script ends.
rcall(publishCommand, channel, freed + permits)
held = held - permits
if held <= 0 then
  -- No lease is left: the keys go, and the stored limit with them.
  rcall('DEL', semKey, leasesKey)
  return permits
end
prune(expired)
rcall('HDEL', semKey, owner)
rcall('HSET', semKey, 'held', string.format('%d', held))
rcall('ZREM', leasesKey, owner)
return permits
