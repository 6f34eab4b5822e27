--[[
  Renews a batch of holds of RReadWriteLocks (the Redisson layout): a read hold's timeout keys and
  a write hold's hash get a lease from now, as Redisson's renewals give them.

  Input:
    KEYS[1..n]  pairs, one per hold: KEYS[2i - 1] its lock hash, KEYS[2i] the base of its
                timeout keys
    ARGV[1]     lease in milliseconds
    ARGV[i + 1] the member ("r:<owner>" or "w:<owner>") of the i-th hold

  Output: an array of n / 2 integers, one per hold in order
    1  renewed
    0  the hold is gone (its field or its first timeout key ended, or a key holds another
       type: that one hold never fails the whole batch)
]]
local leaseMs = tonumber(ARGV[1])
local rcall = redis.call
local renewed = {}
for i, hashKey in ipairs(KEYS) do
  if i % 2 == 1 then
    local base, member = KEYS[i + 1], ARGV[(i + 1) / 2 + 1]
    local read, owner = string.sub(member, 1, 1) == 'r', string.sub(member, 3)
    local timeouts = base .. ':' .. owner .. ':rwlock_timeout:'
    local count = tonumber(redis.pcall('HGET', hashKey, read and owner or owner .. ':write'))
    local flag = 0
    if count and (not read or rcall('EXISTS', timeouts .. '1') == 1) then
      if read then
        for n = 1, count do
          rcall('PEXPIRE', timeouts .. n, leaseMs)
        end
      end
      if rcall('PTTL', hashKey) < leaseMs then
        rcall('PEXPIRE', hashKey, leaseMs)
      end
      flag = 1
    end
    renewed[#renewed + 1] = flag
  end
end
return renewed
