--[[
  Takes the lock for an owner, or re-enters it when the owner already holds it.

  Input:
    KEYS[1] lock key: hash of owner field -> hold count
    KEYS[2] fence key: string, the last fencing token issued for this lock
    ARGV[1] owner field: "<clientId>:<contextId>"
    ARGV[2] lease in milliseconds: the PEXPIRE of a first acquisition; a re-entry
            only ever lengthens a remaining lease to it (0, or a key without expiry,
            is left alone)
    ARGV[3] the hold count the caller believes it has (0 for a first acquisition)
    ARGV[4] time to live of the fence key in milliseconds

  Output: a two-element array {count, value}
    {0, pttl}   not acquired: another owner holds it; pttl is its remaining lease
                in milliseconds (-1 when the key has no expiry). For a caller that
                believed it held the lock (ARGV[3] > 0): its hold is gone
    {0, -2}     not acquired: the caller believed it held the lock (ARGV[3] > 0)
                but the lock is gone; nothing is written
    {1, token}  acquired for the first time; token is the new fencing token:
                max(last + 1, Redis TIME in microseconds), an integer reply, or
                a decimal string when taken from TIME (never a Lua float turned
                into a string, which would round tokens above 10^14)
    {n, 0}      re-entered: n > 1 is the owner's hold count now
    error       WRONGTYPE when either key holds another type (a foreign value under the
                lock key is recognised when it has no expiry; one with an expiry is
                waited out like a lock), or the fence key a string that is not a
                number; nothing is written then
]]
local lockKey, fenceKey = KEYS[1], KEYS[2]
local owner, leaseMs, believed, fenceTtlMs = ARGV[1], ARGV[2], tonumber(ARGV[3]), ARGV[4]
local rcall = redis.call

-- PTTL answers both questions a first attempt needs: is it locked (-2: no), and for how long. Its
-- owner field is new, so a lock that exists is someone else's (the caller cleans up after an
-- attempt that ioredis may have resent).
local pttl = rcall('PTTL', lockKey)
if pttl ~= -2 and believed == 0 then
  -- relock gives every lock an expiry: a key without one may be someone else's value.
  if pttl == -1 and rcall('TYPE', lockKey)['ok'] ~= 'hash' then
    return redis.error_reply('WRONGTYPE the lock key holds a value that is not a lock hash')
  end
  return {0, pttl}
end
if pttl ~= -2 then
  local count = rcall('HGET', lockKey, owner)
  if not count then
    return {0, pttl}
  end
  count = tonumber(count)
  -- A count above what the caller believes means this call is a retry (after a
  -- reconnect) of one that already went through: report, do not count twice.
  if count == believed then
    count = rcall('HINCRBY', lockKey, owner, 1)
  end
  -- Only ever lengthen, and never give an expiry to a key that has none (-1).
  if pttl >= 0 and tonumber(leaseMs) > pttl then
    rcall('PEXPIRE', lockKey, leaseMs)
  end
  return {count, 0}
end

if believed > 0 then
  return {0, -2}
end

-- Read and check the fence before any write: a script that fails half-way is not rolled back.
local last = tonumber(rcall('GET', fenceKey) or '0')
if not last then
  return redis.error_reply('WRONGTYPE the fence key holds a string that is not a number')
end
local time = rcall('TIME')
local nowUs = tonumber(time[1]) * 1000000 + tonumber(time[2])

rcall('HSET', lockKey, owner, 1)
rcall('PEXPIRE', lockKey, leaseMs)
if last < nowUs then
  local token = time[1] .. string.format('%06d', tonumber(time[2]))
  rcall('SET', fenceKey, token, 'PX', fenceTtlMs)
  return {1, token}
end
local token = rcall('INCR', fenceKey)
rcall('PEXPIRE', fenceKey, fenceTtlMs)
return {1, token}
