--[[
  Confirms a grant: gives the owner's claim the full lease and tells the fencing token it holds the
  lock under. A grant seen late may be an older one than the owner holds now (it was queued again
  and granted anew): the token comes from here, never from that old message.

  Input:
    KEYS[1] lock key: hash of owner field -> hold count
    KEYS[2] fence key: string, the last fencing token issued for this lock (the holder's)
    ARGV[1] owner field: "<clientId>:<contextId>"
    ARGV[2] lease in milliseconds: the PEXPIRE of the lock key

  Output:
    token  the owner holds the lock, now for the lease: its fencing token, a decimal string
    0      the owner does not hold it (its claim ended, or it was force-unlocked); nothing
           is written
]]
local lockKey, fenceKey = KEYS[1], KEYS[2]
local owner, leaseMs = ARGV[1], ARGV[2]
local rcall = redis.call

if rcall('HEXISTS', lockKey, owner) == 0 then
  return 0
end
rcall('PEXPIRE', lockKey, leaseMs)
return rcall('GET', fenceKey) or 0
