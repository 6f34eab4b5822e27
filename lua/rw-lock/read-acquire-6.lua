--[[
  Takes a read hold for a new owner: the first acquisition of a read hold (re-entry is
  reenter-3.lua). Readers share the lock; a writer, or a waiting writer's intent, keeps new
  readers out, but for the readers the last write release admitted (the read batch). The writer's
  own context always gets in (downgrade).

  Input:
    KEYS[1] rw hash: `writer` -> write owner; `r:<owner>` / `w:<owner>` -> hold count
    KEYS[2] leases zset: `r:<owner>` / `w:<owner>` -> lease end, Redis TIME in ms
    KEYS[3] intents zset: waiting writer's wait id -> Redis TIME (ms) its intent ends
    KEYS[4] waiting readers zset: waiting reader's wait id -> Redis TIME (ms) it ends
    KEYS[5] batch zset: the readers a write release admitted (PX = the batch)
    KEYS[6] fence key: string, the last fencing token of this lock name
    ARGV[1] owner: "<clientId>:<contextId>", new for every attempt
    ARGV[2] lease in milliseconds
    ARGV[3] time to live of the fence key in milliseconds (at least the lease)
    ARGV[4] wait id: this acquire's id, the same over its attempts
    ARGV[5] the write hold's owner of the caller's context, or "" (downgrade)
    ARGV[6] how long, in milliseconds, a refused reader stays registered past its retry hint
    ARGV[7] optional (Redlock): a token floor, a decimal integer of microseconds below 2^53 - 1
            that stands in for Redis TIME in the token; "" or absent: Redis TIME
    ARGV[8] optional (Redlock): "1" names the holder in a refusal; "" or absent: it does not

  Output: one value
    token      acquired; the new fencing token max(last + 1, Redis TIME in microseconds, or
               the floor ARGV[7]), a decimal string. Also when the owner holds
               a read hold already and would be refused: only an earlier run of this very
               call can have taken it (the client sent it twice after a connection closed);
               nothing else is written then
    {0, ms}    not acquired: a writer holds it (ms = what is left of its lease), or a writer
               waits and the reader is not in the batch (ms = until the first intent ends);
               the reader is registered as waiting
    {0, ms, holder}  the same when ARGV[8] is "1": holder is "w:<owner>" of the writer that
               holds it, or "" when an intent refused the reader
    error      WRONGTYPE when a key holds another type or the fence key is not a whole
               number; FENCEOVERFLOW at 2^53 - 1; nothing is written then
]]
local hashKey, leasesKey, intentsKey, waitingKey, batchKey, fenceKey = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6]
local owner, leaseMs, fenceTtlMs, waitId, writeOwner, registerMs = ARGV[1], tonumber(ARGV[2]), ARGV[3], ARGV[4], ARGV[5], tonumber(ARGV[6])
local floor, nameHolder = ARGV[7] or '', ARGV[8] or ''
local rcall = redis.call

-- @include state
-- @include shared/fence

-- Reads and checks first: a script that fails half-way is not rolled back.
local failed = readFence()
if failed then
  return failed
end
rcall('HGET', hashKey, 'writer')
prune()
rcall('ZREMRANGEBYSCORE', intentsKey, '-inf', nowMs)
rcall('ZREMRANGEBYSCORE', waitingKey, '-inf', nowMs)

-- A Redlock client's floor stands in for Redis TIME: its masters then propose one token (see
-- lua/lock/quorum-acquire-2.lua), and the write-back of the largest is seldom needed.
local function issue()
  if floor ~= '' then
    time = { string.sub(floor, 1, -7), string.sub(floor, -6) }
  end
  return nextToken()
end

local function refuse(hintMs, holder)
  -- The owner is new for every attempt: a live read hold of it was taken by an earlier run of this
  -- call, which a writer's intent (or a writer that took it since it ended) cannot undo.
  if rcall('HEXISTS', hashKey, 'r:' .. owner) == 1 then
    return issue()
  end
  local endsAt = nowMs + hintMs + registerMs
  rcall('ZADD', waitingKey, endsAt, waitId)
  if rcall('PTTL', waitingKey) < hintMs + registerMs then
    rcall('PEXPIRE', waitingKey, hintMs + registerMs)
  end
  if nameHolder == '1' then
    return { 0, hintMs, holder }
  end
  return { 0, hintMs }
end

local writer = rcall('HGET', hashKey, 'writer')
local downgrade = writer and writer == writeOwner
if writer and not downgrade then
  return refuse(math.max(0, tonumber(rcall('ZSCORE', leasesKey, 'w:' .. writer) or nowMs) - nowMs), 'w:' .. writer)
end
-- Writer-preferring: a waiting writer's intent keeps new readers out, except the readers the last
-- write release admitted (the batch) and the writer's own context.
if not downgrade and not rcall('ZSCORE', batchKey, waitId) then
  local first = rcall('ZRANGE', intentsKey, 0, 0, 'WITHSCORES')
  if first[2] then
    return refuse(tonumber(first[2]) - nowMs, '')
  end
end

rcall('ZREM', waitingKey, waitId)
rcall('ZREM', batchKey, waitId)
local field = 'r:' .. owner
rcall('HSET', hashKey, field, 1)
rcall('ZADD', leasesKey, nowMs + leaseMs, field)
settle()
return issue()
