--[[
  Takes a read hold of an RReadWriteLock (the Redisson layout) for a new owner, as Redisson's read
  lock does: when the lock is free, in read mode (readers get in past waiting writers), or
  write-locked by the caller's own context (downgrade). Each read level n of an owner has its
  timeout key <base>:<owner>:rwlock_timeout:<n> with the hold's lease.

  Input:
    KEYS[1] the lock hash <name>: "mode" -> read | write; "<owner>" -> read hold count;
            "<owner>:write" -> write hold count
    KEYS[2] the base of the timeout keys: {<name>} (or <name> when it has a brace)
    KEYS[3] fence key: relock's token counter {<name>}:fence, no expiry
    ARGV[1] owner: "<clientId>:<n>", new for every attempt
    ARGV[2] lease in milliseconds
    ARGV[3] the write hold's owner of the caller's context, or "" (downgrade)

  Output: one value
    token     acquired; the new token max(last + 1, Redis TIME in microseconds), a decimal
              string (the counter keeps no expiry). Also when
              the owner has its field already: only an earlier run of this very call can have
              written it (a resend); nothing else is written then
    {0, ms}   not acquired: a writer holds it for ms more milliseconds (-1: no expiry)
    error     WRONGTYPE when a key holds another type or the fence key a string that is not
              a whole number; FENCEOVERFLOW at 2^53 - 1
]]
local hashKey, base, fenceKey = KEYS[1], KEYS[2], KEYS[3]
local owner, leaseMs, writeOwner = ARGV[1], tonumber(ARGV[2]), ARGV[3]
local rcall = redis.call

local time = rcall('TIME')
local fenceTtlMs = 0
-- @include shared/fence

-- Reads and checks the fence first: a script that fails half-way is not rolled back.
local failed = readFence()
if failed then
  return failed
end

if rcall('HEXISTS', hashKey, owner) == 1 then
  return nextToken()
end
local mode = rcall('HGET', hashKey, 'mode')
if mode == 'write' and (writeOwner == '' or rcall('HEXISTS', hashKey, writeOwner .. ':write') == 0) then
  return {0, rcall('PTTL', hashKey)}
end
if not mode then
  rcall('HSET', hashKey, 'mode', 'read')
end
rcall('HSET', hashKey, owner, 1)
rcall('SET', base .. ':' .. owner .. ':rwlock_timeout:1', 1, 'PX', leaseMs)
rcall('PEXPIRE', hashKey, math.max(rcall('PTTL', hashKey), leaseMs))
return nextToken()
