--[[
  Takes the write hold of an RReadWriteLock (the Redisson layout) for a new owner: only a free lock
  (no mode), as Redisson's write lock does; the field is "<owner>:write".

  Input:
    KEYS[1] the lock hash <name>: "mode" -> read | write; "<owner>" -> read hold count;
            "<owner>:write" -> write hold count
    KEYS[2] fence key: relock's token counter {<name>}:fence, no expiry
    ARGV[1] owner: "<clientId>:<n>", new for every attempt
    ARGV[2] lease in milliseconds

  Output: one value
    token     acquired; the new token max(last + 1, Redis TIME in microseconds), a decimal
              string (the counter keeps no expiry). Also when
              the owner is the writer already (a resend of this very call); nothing else is
              written then
    {0, ms}   not acquired: readers or a writer hold it for ms more milliseconds (-1: no expiry)
    error     WRONGTYPE when a key holds another type or the fence key a string that is not
              a whole number; FENCEOVERFLOW at 2^53 - 1
]]
local hashKey, fenceKey = KEYS[1], KEYS[2]
local owner, leaseMs = ARGV[1], tonumber(ARGV[2])
local rcall = redis.call
local writer = owner .. ':write'

local time = rcall('TIME')
local fenceTtlMs = 0
-- @include shared/fence

-- Reads and checks the fence first: a script that fails half-way is not rolled back.
local failed = readFence()
if failed then
  return failed
end

local mode = rcall('HGET', hashKey, 'mode')
if mode == 'write' and rcall('HEXISTS', hashKey, writer) == 1 then
  return nextToken()
end
if mode then
  return {0, rcall('PTTL', hashKey)}
end
rcall('HSET', hashKey, 'mode', 'write', writer, 1)
rcall('PEXPIRE', hashKey, leaseMs)
return nextToken()
