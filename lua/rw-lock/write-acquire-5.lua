--[[
  Takes the write hold for a new owner: the first acquisition of a write hold (re-entry is
  reenter-3.lua). Only a free lock is taken: no writer, no reader, no read batch open. Refused by
  readers or a read batch, the writer leaves an intent that keeps new readers out until it ends.

  Input:
    KEYS[1] rw hash: `writer` -> write owner; `r:<owner>` / `w:<owner>` -> hold count
    KEYS[2] leases zset: `r:<owner>` / `w:<owner>` -> lease end, Redis TIME in ms
    KEYS[3] intents zset: waiting writer's wait id -> Redis TIME (ms) its intent ends
    KEYS[4] batch zset: the readers a write release admitted (PX = the batch)
    KEYS[5] fence key: string, the last fencing token of this lock name
    ARGV[1] owner: "<clientId>:<contextId>", new for every attempt
    ARGV[2] lease in milliseconds
    ARGV[3] time to live of the fence key in milliseconds (at least the lease)
    ARGV[4] wait id: this acquire's id, the same over its attempts
    ARGV[5] intent in milliseconds: how long an intent keeps new readers out unless renewed
    ARGV[6] optional (Redlock): a token floor, a decimal integer of microseconds below 2^53 - 1
            that stands in for Redis TIME in the token; "" or absent: Redis TIME
    ARGV[7] optional (Redlock): "1" names the holder in a refusal; "" or absent: it does not

  Output: one value
    token        acquired; the new fencing token max(last + 1, Redis TIME in microseconds, or
                 the floor ARGV[6]), a decimal string. Also when the owner is
                 the writer already: only an earlier run of this very call can have made it
                 so (the client sent it twice after a connection closed); nothing else is
                 written then
    {0, ms, 0}   not acquired: a writer holds it for ms more milliseconds (or less: until
                 the caller's own intent ends)
    {0, ms, 1}   not acquired: readers hold it (ms = the latest read lease end) or a read batch
                 is open (ms = its end); the intent is set until now + ARGV[5]
    {0, ms, intent, holder}  the same when ARGV[7] is "1": holder is "w:<owner>" of the
                 writer that holds it, or "" when readers or a read batch refused it
    error        WRONGTYPE when a key holds another type or the fence key is not a whole
                 number; FENCEOVERFLOW at 2^53 - 1; nothing is written then
]]
local hashKey, leasesKey, intentsKey, batchKey, fenceKey = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5]
local owner, leaseMs, fenceTtlMs, waitId, intentMs = ARGV[1], tonumber(ARGV[2]), ARGV[3], ARGV[4], tonumber(ARGV[5])
local floor, nameHolder = ARGV[6] or '', ARGV[7] or ''
local rcall = redis.call

-- @include state
-- @include shared/fence

local failed = readFence()
if failed then
  return failed
end
rcall('HGET', hashKey, 'writer')
prune()
rcall('ZREMRANGEBYSCORE', intentsKey, '-inf', nowMs)

-- A Redlock client's floor stands in for Redis TIME (as in read-acquire-6.lua).
local function issue()
  if floor ~= '' then
    time = { string.sub(floor, 1, -7), string.sub(floor, -6) }
  end
  return nextToken()
end

local writer = rcall('HGET', hashKey, 'writer')
-- The owner is new for every attempt: as the writer, it was made so by an earlier run of this call.
if writer == owner then
  return issue()
end
if writer then
  local hintMs = math.max(0, tonumber(rcall('ZSCORE', leasesKey, 'w:' .. writer) or nowMs) - nowMs)
  -- A writer whose intent lives on wakes when it ends, to renew it: a write release that opens a
  -- read batch does not wake writers while an intent keeps new readers out.
  local intent = rcall('ZSCORE', intentsKey, waitId)
  if intent then
    hintMs = math.min(hintMs, tonumber(intent) - nowMs)
  end
  if nameHolder == '1' then
    return { 0, hintMs, 0, 'w:' .. writer }
  end
  return { 0, hintMs, 0 }
end

local function intend(hintMs)
  rcall('ZADD', intentsKey, nowMs + intentMs, waitId)
  if rcall('PTTL', intentsKey) < intentMs then
    rcall('PEXPIRE', intentsKey, intentMs)
  end
  if nameHolder == '1' then
    return { 0, math.max(0, hintMs), 1, '' }
  end
  return { 0, math.max(0, hintMs), 1 }
end

local batchMs = rcall('PTTL', batchKey)
if batchMs > 0 then
  return intend(batchMs)
end
local last = rcall('ZRANGE', leasesKey, -1, -1, 'WITHSCORES')
if last[2] then
  return intend(tonumber(last[2]) - nowMs)
end

rcall('ZREM', intentsKey, waitId)
local field = 'w:' .. owner
rcall('HSET', hashKey, 'writer', owner, field, 1)
rcall('ZADD', leasesKey, nowMs + leaseMs, field)
settle()
return issue()
