--[[
  Renews a batch of holds (read or write side): each hold whose lease has not ended gets a lease
  end of now + the lease, never earlier than it had.

  Input:
    KEYS[1..n] pairs, one per hold: KEYS[2i - 1] its rw hash, KEYS[2i] its leases zset
               (`r:<owner>` / `w:<owner>` -> lease end, Redis TIME in ms)
    ARGV[1]    lease in milliseconds
    ARGV[i + 1] the member ("r:<owner>" or "w:<owner>") of the i-th hold

  Output: an array of n / 2 integers, one per hold in order
    1  renewed
    0  the hold is gone (its lease ended, force-unlocked, released, or a key now holds another
       type: that one hold never fails the whole batch); an ended lease is never brought back
]]
local leaseMs = tonumber(ARGV[1])
local rcall = redis.call
-- @include shared/now
local renewed = {}

for i, hashKey in ipairs(KEYS) do
  if i % 2 == 1 then
    local leasesKey = KEYS[i + 1]
    local hold = (i + 1) / 2
    local member = ARGV[hold + 1]
    local endsAt = redis.pcall('ZSCORE', leasesKey, member)
    if type(endsAt) == 'string' and tonumber(endsAt) > nowMs and redis.pcall('HEXISTS', hashKey, member) == 1 then
      -- The later of the two ends, computed here: ZADD's GT flag is Redis 6.2+.
      rcall('ZADD', leasesKey, string.format('%d', math.max(tonumber(endsAt), nowMs + leaseMs)), member)
      if rcall('PTTL', hashKey) < leaseMs then
        rcall('PEXPIRE', hashKey, leaseMs)
        rcall('PEXPIRE', leasesKey, leaseMs)
      end
      renewed[hold] = 1
    else
      renewed[hold] = 0
    end
  end
end
return renewed
