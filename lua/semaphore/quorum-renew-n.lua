--[[
  Renews a batch of Redlock semaphore leases on one master: each lease still live here, holding
  the slots its majority agreed on, gets a new end. An entry that holds other slots (a master
  outside the majority whose give-back was lost) is not renewed: it ends with its lease.

  Input:
    KEYS[1..n]   pairs: KEYS[2i - 1] a slots hash ("<owner>" -> "<permits>:<slots>"), KEYS[2i]
                 its leases zset (owner field -> lease end, Redis TIME in milliseconds)
    ARGV[1]      lease in milliseconds
    ARGV[2..]    per pair i: the owner field at ARGV[2i], the slots its lease holds at
                 ARGV[2i + 1] (decimal numbers joined by ",", ascending)

  Output: an array of n / 2 integers, one per pair in order
    1  renewed: the lease ends a lease from now, and both keys live at least 5 s longer
    0  not renewed: the lease is gone (ended, released), holds other slots here, or a key
       holds another type (that one pair never fails the whole batch); a lease past its
       end is never revived
]]
local leaseMs = tonumber(ARGV[1])
local rcall = redis.call

-- @include shared/now
-- @include shared/lease-end

local renewed = {}

for i, slotsKey in ipairs(KEYS) do
  if i % 2 == 1 then
    local leasesKey, owner, slots = KEYS[i + 1], ARGV[i + 1], ARGV[i + 2]
    local ends = tonumber(redis.pcall('ZSCORE', leasesKey, owner))
    local entry = redis.pcall('HGET', slotsKey, owner)
    if ends and ends > nowMs and type(entry) == 'string' and string.match(entry, '^%d+:(.*)$') == slots then
      extendLease(slotsKey, leasesKey, owner, ends)
      renewed[#renewed + 1] = 1
    else
      renewed[#renewed + 1] = 0
    end
  end
end
return renewed
