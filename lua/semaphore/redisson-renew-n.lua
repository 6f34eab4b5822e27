--[[
  Renews a batch of relock leases of RPermitExpirableSemaphores (the Redisson layout): each live
  lease's permits get a new expiry, as Redisson's updateLeaseTime gives one.

  Input:
    KEYS[1..n]   pairs: KEYS[2i - 1] a count <name> (the hold's key), KEYS[2i] its timeouts
                 zset {<name>}:timeout
    ARGV[1]      lease in milliseconds
    ARGV[2..]    owner of the i-th pair at ARGV[i + 1]

  Output: an array of n / 2 integers, one per pair in order
    1  renewed: every permit of the lease expires a lease from now
    0  the lease is gone (expired, given back, or a key of another type): a permit past its
       expiry is never revived
]]
local leaseMs = tonumber(ARGV[1])
local rcall = redis.call
-- @include shared/now

local renewed = {}
for i, _ in ipairs(KEYS) do
  if i % 2 == 1 then
    local timeoutsKey, owner = KEYS[i + 1], ARGV[(i + 1) / 2 + 1]
    local ends = tonumber(redis.pcall('ZSCORE', timeoutsKey, owner .. ':1'))
    local flag = 0
    if ends and ends > nowMs then
      local n = 1
      while rcall('ZSCORE', timeoutsKey, owner .. ':' .. n) do
        rcall('ZADD', timeoutsKey, nowMs + leaseMs, owner .. ':' .. n)
        n = n + 1
      end
      flag = 1
    end
    renewed[#renewed + 1] = flag
  end
end
return renewed
