--[[
  Re-enters a hold of an RReadWriteLock (the Redisson layout): one more level on the owner's field;
  a read level gets its own timeout key, as Redisson's read lock writes one per level.

  Input:
    KEYS[1] the lock hash <name>
    KEYS[2] the base of the timeout keys: {<name>} (or <name> when it has a brace)
    ARGV[1] member: "r:<owner>" (field <owner>) or "w:<owner>" (field <owner>:write)
    ARGV[2] lease in milliseconds: the hold's lease is only ever lengthened to it (0: kept)
    ARGV[3] the hold count the caller believes it has (>= 1)

  Output: an integer
    -1   the owner holds nothing here (expired, force-unlocked, or released)
    n>1  the owner's hold count now; above what the caller believes, this call is a retry of
         one that went through (not counted twice)
]]
local hashKey, base = KEYS[1], KEYS[2]
local member, leaseMs, believed = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3])
local rcall = redis.call
local read, owner = string.sub(member, 1, 1) == 'r', string.sub(member, 3)
local field = read and owner or owner .. ':write'

local count = tonumber(rcall('HGET', hashKey, field))
if not count then
  return -1
end
local timeouts = base .. ':' .. owner .. ':rwlock_timeout:'
if count == believed then
  count = rcall('HINCRBY', hashKey, field, 1)
  if read then
    -- The new level lives as long as the hold: its first level's timeout, or the lease asked for.
    rcall('SET', timeouts .. count, 1, 'PX', math.max(rcall('PTTL', timeouts .. '1'), leaseMs, 1))
  end
end
if leaseMs > 0 then
  if read then
    for n = 1, count do
      if rcall('PTTL', timeouts .. n) < leaseMs then
        rcall('PEXPIRE', timeouts .. n, leaseMs)
      end
    end
  end
  local pttl = rcall('PTTL', hashKey)
  if pttl >= 0 and pttl < leaseMs then
    rcall('PEXPIRE', hashKey, leaseMs)
  end
end
return count
