--[[
  Re-enters a hold the owner has (read or write side): one more level on its field.

  Input:
    KEYS[1] rw hash: `writer` -> write owner; `r:<owner>` / `w:<owner>` -> hold count
    KEYS[2] leases zset: `r:<owner>` / `w:<owner>` -> lease end, Redis TIME in ms
    KEYS[3] fence key: string, the last fencing token of this lock name
    ARGV[1] the hold's member: "r:<owner>" or "w:<owner>"
    ARGV[2] lease in milliseconds: the hold's lease end is only ever moved later to now + this
            (0: left alone); the fence key is then kept at least as long
    ARGV[3] the hold count the caller believes it has (>= 1)

  Output: an integer
    -1   the owner holds nothing here (its lease ended, force-unlocked, or released): nothing is
         written
    n>1  the hold count now. A count above what the caller believes means this call is a retry
         (after a reconnect) of one that went through: it is reported, not counted twice.
]]
local hashKey, leasesKey, fenceKey = KEYS[1], KEYS[2], KEYS[3]
local member, leaseMs, believed = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3])
local rcall = redis.call

-- @include state

local count = rcall('HGET', hashKey, member)
local endsAt = rcall('ZSCORE', leasesKey, member)
-- A lease that ended is not brought back, even before a script pruned it.
if not count or not endsAt or tonumber(endsAt) <= nowMs then
  return -1
end
count = tonumber(count)
if count == believed then
  count = rcall('HINCRBY', hashKey, member, 1)
end
if leaseMs > 0 and nowMs + leaseMs > tonumber(endsAt) then
  rcall('ZADD', leasesKey, nowMs + leaseMs, member)
  settle()
  local fencePttl = rcall('PTTL', fenceKey)
  if fencePttl >= 0 and fencePttl < leaseMs then
    rcall('PEXPIRE', fenceKey, leaseMs)
  end
end
return count
