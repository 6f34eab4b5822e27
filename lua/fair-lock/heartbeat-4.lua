--[[
  One client's heartbeat for its waiters on one lock: refreshes each one's deadline, re-joins at
  the tail an owner whose entry was dropped (its client was unreachable or paused), marked so that
  the next grant to it needs no listener (its reply here tells it, within H), and pumps a
  lock that is free with a queue (its holder expired: key expiry tells nobody). A grant to one of
  the owners given needs no listener: this reply tells it.

  Input:
    KEYS[1] lock key: hash of owner field -> hold count (a grant's claim, then its lease)
    KEYS[2] queue key: list of waiting owner fields, oldest first
    KEYS[3] deadlines key: zset of waiting owner field -> Redis TIME in milliseconds by which
            its client must heartbeat again; and '~' .. owner field, with its owner's deadline,
            for an owner re-queued here
    KEYS[4] fence key: string, the last fencing token issued for this lock
    ARGV[1] publish command: "publish" or "spublish"
    ARGV[2] grant channel prefix: a grant is published on this + the grantee's client id
    ARGV[3] claim in milliseconds: the lease of a granted lock until its waiter confirms it
    ARGV[4] time to live of the fence key in milliseconds (at least the claim, for a grant)
    ARGV[5] queue deadline in milliseconds: the new deadline of each entry is nowMs + ARGV[5]
    ARGV[6] time to live of the queue keys in milliseconds
    ARGV[7..n] owner fields of the client's waiters

  Output: an array {nowMs, state1, token1, pttl1, state2, token2, pttl2, ...}, nowMs = Redis
          TIME in milliseconds, then three elements per owner in the order given:
    2, token, pttl  the owner holds the lock (granted): token is the fencing token (a decimal
                    string), pttl its remaining claim or lease in milliseconds
    1, 0, 0         queued; its deadline was refreshed
    0, 0, 0         its entry was gone: it was queued again at the tail, marked (its next
                    grant needs no listener)
    error           WRONGTYPE when a key holds another type; FENCEOVERFLOW when the lock is
                    free and the fence holds 2^53 - 1 or more; nothing is written then
]]
local lockKey, queueKey, deadlinesKey, fenceKey = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local publishCommand, grantPrefix, claimMs, fenceTtlMs = ARGV[1], ARGV[2], ARGV[3], ARGV[4]
local deadlineMs, queueTtlMs = tonumber(ARGV[5]), ARGV[6]
local owners = {unpack(ARGV, 7)}
local rcall = redis.call
local time, nowMs

-- The holders (a fair lock has at most one); HKEYS fails on a lock key of another type, and LLEN on
-- a queue key of another type, before anything is written.
local holders = {}
for _, field in ipairs(rcall('HKEYS', lockKey)) do
  holders[field] = true
end
local free = next(holders) == nil
rcall('LLEN', queueKey)

-- @include shared/fence
-- @include grant-next

if free then
  local failed = readFence()
  if failed then
    return failed
  end
end
now()

-- The owners this reply reaches.
local mine = {}
for _, owner in ipairs(owners) do
  mine[owner] = true
end

-- One command per queued owner: ZADD refreshes a known entry's deadline and reports a new one,
-- whose owner had been dropped and is queued again at the tail.
local states = {}
for i, owner in ipairs(owners) do
  if holders[owner] then
    states[i] = 2
  elseif rcall('ZADD', deadlinesKey, nowMs + deadlineMs, owner) == 1 then
    -- Dropped, yet its client heartbeats: no grant message may reach it (its subscription sits on
    -- a replica after a failover). Marked: the next grant to it needs no listener, this reply tells it.
    rcall('ZADD', deadlinesKey, nowMs + deadlineMs, HEARTBEAT_MARK .. owner)
    rcall('RPUSH', queueKey, owner)
    states[i] = 0
  else
    -- A mark keeps its owner's deadline.
    rcall('ZADD', deadlinesKey, 'XX', nowMs + deadlineMs, HEARTBEAT_MARK .. owner)
    states[i] = 1
  end
end
rcall('PEXPIRE', queueKey, queueTtlMs)
rcall('PEXPIRE', deadlinesKey, queueTtlMs)

if free then
  local granted = grantNext(mine)
  if granted then
    holders[granted[1]] = true
  end
end

local reply = {nowMs}
local token, pttl
for i, owner in ipairs(owners) do
  if holders[owner] then
    if not token then
      token, pttl = rcall('GET', fenceKey), rcall('PTTL', lockKey)
    end
    reply[#reply + 1] = 2
    reply[#reply + 1] = token
    reply[#reply + 1] = pttl
  else
    reply[#reply + 1] = states[i]
    reply[#reply + 1] = 0
    reply[#reply + 1] = 0
  end
end
return reply
