--[[
  Counts the available permits of an RPermitExpirableSemaphore (the Redisson layout), after giving
  back the expired ones (as Redisson's availablePermits does).

  Input:
    KEYS[1] the count of available permits: string <name>
    KEYS[2] timeouts: zset {<name>}:timeout of permit id -> expiry in epoch ms
    KEYS[3] channel redisson_sc:{<name>}
    ARGV[1] the limit the caller's semaphore was made with
    ARGV[2] publish command: "publish" or "spublish"

  Output: an array
    {1, "n"}     n permits are available (decimal digits, as every count here) (the limit less those held, when the count is absent)
    {-1, "total"} available plus held permits are total, not the limit
]]
local counterKey, timeoutsKey, channel = KEYS[1], KEYS[2], KEYS[3]
local limit, publishCommand = tonumber(ARGV[1]), ARGV[2]
local rcall = redis.call

-- @include redisson-reclaim

reclaim()
local held = rcall('ZCARD', timeoutsKey)
local available = tonumber(rcall('GET', counterKey) or math.max(0, limit - held))
if available + held ~= limit then
  return {-1, string.format('%d', available + held)}
end
return {1, string.format('%d', available)}
