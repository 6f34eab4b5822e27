--[[
  Counts the permits of a semaphore that are free now. Writes nothing.

  Input:
    KEYS[1] semaphore key: hash of "limit", "held" and "<owner>" -> permits of that lease
    KEYS[2] leases key: zset of owner field -> lease end, Redis TIME in milliseconds
    ARGV[1] the limit the caller's semaphore was made with

  Output: an array
    {1, "n"}      n permits are free (decimal digits: counts near 2^53 must not pass through
                  a client's float): the limit less the permits of live leases (leases
                  past their end count as free, pruned or not)
    {-1, "limit"} live leases hold the semaphore under another limit, the one returned
]]
local semKey, leasesKey, limitArg = KEYS[1], KEYS[2], ARGV[1]
local rcall = redis.call
local limit = tonumber(limitArg)

-- @include prune

local state = rcall('HMGET', semKey, 'limit', 'held')
local stored = tonumber(state[1])
local _, freed = ended()
local held = math.max(0, tonumber(state[2] or '0') - freed)
if held > 0 and stored and stored ~= limit then
  return {-1, state[1]}
end
return {1, string.format('%d', math.max(0, limit - held))}
