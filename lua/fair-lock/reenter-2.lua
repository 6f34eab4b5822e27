--[[
  Re-enters a lock the owner holds: one more hold on the owner's field.

  Input:
    KEYS[1] lock key: hash of owner field -> hold count
    KEYS[2] fence key: string, the last fencing token issued for this lock
    ARGV[1] owner field: "<clientId>:<contextId>"
    ARGV[2] lease in milliseconds: a remaining lease is only ever lengthened to it
            (0, or a key without expiry, is left alone); the fence key is then kept
            at least as long
    ARGV[3] the hold count the caller believes it has (>= 1)

  Output: an integer
    -1   the owner holds nothing here (expired, force-unlocked, or released):
         nothing is written
    n>1  the owner's hold count now. A count above what the caller believes means
         this call is a retry (after a reconnect) of one that went through: it is
         reported, not counted twice.
]]
local lockKey, fenceKey = KEYS[1], KEYS[2]
local owner, leaseMs, believed = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3])
local rcall = redis.call

local count = rcall('HGET', lockKey, owner)
if not count then
  return -1
end
count = tonumber(count)
if count == believed then
  count = rcall('HINCRBY', lockKey, owner, 1)
end
-- Only ever lengthen, and never give an expiry to a key that has none (-1).
local pttl = rcall('PTTL', lockKey)
if pttl >= 0 and leaseMs > pttl then
  rcall('PEXPIRE', lockKey, leaseMs)
  if rcall('PTTL', fenceKey) < leaseMs then
    rcall('PEXPIRE', fenceKey, leaseMs)
  end
end
return count
