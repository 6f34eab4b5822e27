--[[
  Confirms a grant: gives the owner's claim the full lease, keeps the fence key at least as long,
  and tells the fencing token it holds the lock under. A grant seen late may be an older one than
  the owner holds now (it was queued again and granted anew): the token comes from here, never from
  that old message.

  Input:
    KEYS[1] lock key: hash of owner field -> hold count
    KEYS[2] fence key: string, the last fencing token issued for this lock (the holder's)
    ARGV[1] owner field: "<clientId>:<contextId>"
    ARGV[2] lease in milliseconds: the PEXPIRE of the lock key, and the least time to live of
            the fence key

  Output:
    token  the owner holds the lock, now for the lease: its fencing token, a decimal string
    0      the owner does not hold it (its claim ended, or it was force-unlocked), or the fence
           key is gone (deleted by hand: no token to tell); nothing is written
]]
local lockKey, fenceKey = KEYS[1], KEYS[2]
local owner, leaseMs = ARGV[1], ARGV[2]
local rcall = redis.call
-- Only holdFence() of the shared fence rule runs here: nothing is issued.
local time, fenceTtlMs

-- @include shared/fence

if rcall('HEXISTS', lockKey, owner) == 0 then
  return 0
end
local token = rcall('GET', fenceKey)
if not token then
  return 0
end
rcall('PEXPIRE', lockKey, leaseMs)
holdFence(leaseMs)
return token
