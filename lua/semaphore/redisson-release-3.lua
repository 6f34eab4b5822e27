--[[
  Releases a relock lease of an RPermitExpirableSemaphore (the Redisson layout): its permits come
  back to the count, and the new count is published, as Redisson's release publishes it.

  Input:
    KEYS[1] the count of available permits: string <name>
    KEYS[2] timeouts: zset {<name>}:timeout of permit id -> expiry in epoch ms
    KEYS[3] channel redisson_sc:{<name>}
    ARGV[1] owner: "<clientId>:<n>" (its permits are "<owner>:1" to "<owner>:n")
    ARGV[2] publish command: "publish" or "spublish"

  Output: an integer
    -1   the lease holds no live permit here (expired, given back, or never taken)
    n>=1 released: its n permits came back
]]
local counterKey, timeoutsKey, channel = KEYS[1], KEYS[2], KEYS[3]
local owner, publishCommand = ARGV[1], ARGV[2]
local rcall = redis.call

-- @include redisson-reclaim

reclaim()
local permits = permitsOf(owner)
if #permits == 0 then
  return -1
end
rcall('ZREM', timeoutsKey, unpack(permits))
rcall(publishCommand, channel, rcall('INCRBY', counterKey, #permits))
return #permits
