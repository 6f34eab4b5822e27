--[[
  Takes a free lock for a new owner: the first acquisition of a hold (re-entry is reenter-2.lua).

  Input:
    KEYS[1] lock key: hash of owner field -> hold count
    KEYS[2] fence key: string, the last fencing token issued for this lock
    ARGV[1] owner field: "<clientId>:<contextId>", new for every attempt
    ARGV[2] lease in milliseconds: the PEXPIRE of the lock key
    ARGV[3] time to live of the fence key in milliseconds (at least the lease); 0: a counter
            without expiry (the Redisson layout: RFencedLock's token key)

  Output: one value (no array: the cheapest reply to parse)
    token       acquired; token is the new fencing token: max(last + 1, Redis TIME
                in microseconds), as a decimal string (never a Lua float turned into a
                string, which would round tokens above 10^14, nor an integer reply,
                which a client's parser may round near 2^53). Also when the owner holds the lock already: only
                an earlier run of this very call can have written its field (the client
                sent it twice after a connection closed), so it is this call's hold, and
                it gets a new token (the first run's never reached the caller)
    -1          not acquired: someone holds it and the key has no expiry
    -2 - pttl   not acquired: someone holds it for pttl more milliseconds (<= -2)
    error       WRONGTYPE when either key holds another type (a foreign value under the
                lock key is recognised when it has no expiry; one with an expiry is
                waited out like a lock), or the fence key a string that is not a
                whole number; FENCEOVERFLOW when the fence is at 2^53 - 1 or above;
                nothing is written then
]]
local lockKey, fenceKey = KEYS[1], KEYS[2]
local owner, leaseMs, fenceTtlMs = ARGV[1], ARGV[2], ARGV[3]
local rcall = redis.call
local time

-- @include shared/fence

local function issue()
  local failed = readFence()
  if failed then
    return failed
  end
  time = rcall('TIME')
  return nextToken()
end

-- @include shared/look

local taken = look(lockKey, owner, 'lock', issue)
if taken then
  return taken
end
rcall('HSET', lockKey, owner, 1)
rcall('PEXPIRE', lockKey, leaseMs)
return nextToken()
