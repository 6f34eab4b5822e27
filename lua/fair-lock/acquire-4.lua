--[[
  Takes the fair lock for a new owner, or queues owners: the waiters of one client that are ready
  to join at once join in one call, in order. Nobody jumps the queue: a free lock with waiters is
  first granted to the head of the queue (which also pumps a queue whose holder expired); only a
  free lock with an empty queue is taken directly, by the first owner given.

  Input:
    KEYS[1] lock key: hash of owner field -> hold count (a grant's claim, then its lease)
    KEYS[2] queue key: list of waiting owner fields, oldest first
    KEYS[3] deadlines key: zset of waiting owner field -> Redis TIME in milliseconds by which
            its client must heartbeat again
    KEYS[4] fence key: string, the last fencing token issued for this lock
    ARGV[1] publish command: "publish" or "spublish"
    ARGV[2] grant channel prefix: a grant is published on this + the grantee's client id
    ARGV[3] claim in milliseconds: the lease of a granted lock until its waiter confirms it
    ARGV[4] time to live of the fence key in milliseconds (at least the lease or claim of the
            hold its token goes to)
    ARGV[5] queue deadline in milliseconds: an entry is dropped when its client has not
            heartbeaten for this long
    ARGV[6] time to live of the queue keys in milliseconds: set by a join that finds less than
            ARGV[5] left (a new queue has none)
    ARGV[7] lease in milliseconds: the PEXPIRE of the lock key once taken
    ARGV[8] mode: "try" (never queue) or "wait" (queue each owner not taken)
    ARGV[9..n] owner fields: "<clientId>:<contextId>", in the order they are to be queued

  Output: an array {nowMs, acquired1, value1, acquired2, value2, ...}, nowMs = Redis TIME in
          milliseconds, then two elements per owner in the order given:
    1, token   acquired, for ARGV[7]; token is the fencing token, a decimal string. Also when
               the owner held it already: a resent call, or a grant that reached this owner
               before this call
    0, pttl    not acquired: pttl is the remaining lease of the lock in milliseconds (-1 without
               expiry; -2 when it is free but this call could not grant it: more than 64
               unreachable entries). In "wait" mode the owner is queued (once) with the
               deadline nowMs + ARGV[5]
    error      WRONGTYPE when the lock key or the fence key holds another type (a fence that
               is not a whole number), FENCEOVERFLOW when the fence holds 2^53 - 1 or more;
               nothing is written then
]]
local lockKey, queueKey, deadlinesKey, fenceKey = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local publishCommand, grantPrefix, claimMs, fenceTtlMs = ARGV[1], ARGV[2], ARGV[3], ARGV[4]
local deadlineMs, queueTtlMs = tonumber(ARGV[5]), ARGV[6]
local leaseMs, mode = ARGV[7], ARGV[8]
local rcall = redis.call
local time, nowMs

local pttl = rcall('PTTL', lockKey)
-- relock gives every lock an expiry: a key without one may be someone else's value.
if pttl == -1 and rcall('TYPE', lockKey)['ok'] ~= 'hash' then
  return redis.error_reply('WRONGTYPE the lock key holds a value that is not a lock hash')
end

-- @include shared/fence
-- @include grant-next

-- The owners this call's reply reaches: a grant to one of them needs no listener.
local mine = {}
for i = 9, #ARGV do
  mine[ARGV[i]] = true
end

-- The lock for `owner` if it is free: granted to the head of the queue first; taken directly only
-- with an empty queue. Returns its token, or nil (then pttl says how long the lock is taken).
local function takeFree(owner)
  local failed = readFence()
  if failed then
    return failed
  end
  local queued = rcall('LLEN', queueKey)
  if queued > 0 then
    local granted = grantNext(mine)
    if granted then
      pttl = tonumber(claimMs)
      if granted[1] == owner then
        rcall('PEXPIRE', lockKey, leaseMs)
        holdFence(leaseMs)
        pttl = tonumber(leaseMs)
        return granted[2]
      end
      return nil
    end
    queued = rcall('LLEN', queueKey)
  end
  if queued == 0 then
    now()
    local token = issueToken(leaseMs)
    rcall('HSET', lockKey, owner, 1)
    rcall('PEXPIRE', lockKey, leaseMs)
    pttl = tonumber(leaseMs)
    return token
  end
  return nil
end

local reply = {0}
local joined = false
for i = 9, #ARGV do
  local owner = ARGV[i]
  local token = nil
  if pttl ~= -2 then
    -- Already this owner's: a resent call that went through, or a grant that came first.
    if rcall('HEXISTS', lockKey, owner) == 1 then
      rcall('PEXPIRE', lockKey, leaseMs)
      holdFence(leaseMs)
      token = rcall('GET', fenceKey)
    end
  else
    token = takeFree(owner)
    if type(token) == 'table' then
      return token
    end
  end
  if token then
    reply[#reply + 1] = 1
    reply[#reply + 1] = token
  else
    -- Idempotent: ZADD tells a new entry from a known one, so a resent join neither queues twice
    -- nor moves a deadline by more than the wait.
    if mode == 'wait' and rcall('ZADD', deadlinesKey, now() + deadlineMs, owner) == 1 then
      rcall('RPUSH', queueKey, owner)
      joined = true
    end
    reply[#reply + 1] = 0
    reply[#reply + 1] = pttl
  end
end
-- The queue keys outlive the deadline of every entry (nowMs + D): a new queue gets its lifetime
-- here, and a join renews it once less than D is left. Heartbeats renew it too, but only a client
-- with a waiter queued for H sends them: under a steady stream of short waits nobody does, and a
-- queue that never empties would expire with its waiters in it. Both keys are always given their
-- lifetime together: the list's tells the zset's.
if joined and rcall('PTTL', queueKey) < deadlineMs then
  rcall('PEXPIRE', queueKey, queueTtlMs)
  rcall('PEXPIRE', deadlinesKey, queueTtlMs)
end
reply[1] = now()
return reply
