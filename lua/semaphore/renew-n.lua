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

local time = rcall('TIME')
local nowMs = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
local renewed = {}

for i, semKey in ipairs(KEYS) do
  if i % 2 == 1 then
    local leasesKey, owner = KEYS[i + 1], ARGV[(i + 1) / 2 + 1]
    local ends = tonumber(redis.pcall('ZSCORE', leasesKey, owner))
    if ends and ends > nowMs then
      rcall('ZADD', leasesKey, string.format('%d', math.max(ends, nowMs + leaseMs)), owner)
      -- The keys outlive the lease by 5 s, as every semaphore script leaves them (prune.lua.inc).
      if rcall('PTTL', semKey) < leaseMs + 5000 then
        rcall('PEXPIRE', semKey, leaseMs + 5000)
        rcall('PEXPIRE', leasesKey, leaseMs + 5000)
      end
      renewed[#renewed + 1] = 1
    else
      renewed[#renewed + 1] = 0
    end
  end
end
return renewed
