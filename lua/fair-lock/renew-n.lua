--[[
  Renews a batch of holds: each lock whose owner field is present gets a new lease.

  Input:
    KEYS[1..n] lock keys: hashes of owner field -> hold count
    ARGV[1]    lease in milliseconds (PEXPIRE of every renewed key)
    ARGV[2..n+1] owner field of KEYS[i] at ARGV[i + 1]

  Output: an array of n integers, one per key in order
    1  renewed
    0  the owner no longer holds that lock (expired, force-unlocked, released, or
       the key now holds another type: that one key never fails the whole batch)
]]
local leaseMs = ARGV[1]
local rcall = redis.call
local renewed = {}

for i, lockKey in ipairs(KEYS) do
  if redis.pcall('HEXISTS', lockKey, ARGV[i + 1]) == 1 then
    rcall('PEXPIRE', lockKey, leaseMs)
    renewed[i] = 1
  else
    renewed[i] = 0
  end
end
return renewed
