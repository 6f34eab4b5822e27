--[[
  Renews a batch of semaphore leases: each lease still live gets a new end.

  Input:
    KEYS[1..n]   pairs: KEYS[2i - 1] a semaphore hash, KEYS[2i] its leases zset (owner field
                 -> lease end, Redis TIME in milliseconds)
    ARGV[1]      lease in milliseconds
    ARGV[2..]    owner field of the i-th pair at ARGV[i + 1]

  Output: an array of n / 2 integers, one per pair in order
    1  renewed: the lease ends a lease from now, and both keys live at least 5 s longer
    0  the lease is gone (ended, released, or a key holds another type: that one pair
       never fails the whole batch); a lease past its end is never revived
]]
local leaseMs = tonumber(ARGV[1])
local rcall = redis.call

-- @include shared/now
-- @include shared/lease-end

local renewed = {}

for i, semKey in ipairs(KEYS) do
  if i % 2 == 1 then
    local leasesKey, owner = KEYS[i + 1], ARGV[(i + 1) / 2 + 1]
    local ends = tonumber(redis.pcall('ZSCORE', leasesKey, owner))
    if ends and ends > nowMs then
      extendLease(semKey, leasesKey, owner, ends)
      renewed[#renewed + 1] = 1
    else
      renewed[#renewed + 1] = 0
    end
  end
end
return renewed
