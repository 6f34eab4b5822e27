--[[
  Takes the fair lock for a new owner, or queues the owner. Nobody jumps the queue: a free lock
  with waiters is first granted to the head of the queue (which also pumps a queue whose holder
  expired); only a free lock with an empty queue is taken directly.

  Input:
    KEYS[1] lock key: hash of owner field -> hold count (a grant's claim, then its lease)
    KEYS[2] queue key: list of waiting owner fields, oldest first
    KEYS[3] deadlines key: zset of waiting owner field -> Redis TIME in milliseconds by which
            its client must heartbeat again
    KEYS[4] fence key: string, the last fencing token issued for this lock
    ARGV[1] publish command: "publish" or "spublish"
    ARGV[2] grant channel prefix: a grant is published on this + the grantee's client id
    ARGV[3] claim in milliseconds: the lease of a granted lock until its waiter confirms it
    ARGV[4] time to live of the fence key in milliseconds
    ARGV[5] queue deadline in milliseconds: an entry is dropped when its client has not
            heartbeaten for this long
    ARGV[6] time to live of the queue keys in milliseconds (refreshed by every join)
    ARGV[7] owner field: "<clientId>:<contextId>"
    ARGV[8] lease in milliseconds: the PEXPIRE of the lock key once taken
    ARGV[9] mode: "try" (never queue) or "wait" (queue the owner when not taken)

  Output: a three-element array {acquired, value, nowMs}, nowMs = Redis TIME in milliseconds
    {1, token, nowMs}  acquired, for ARGV[8]; token is the fencing token, a decimal string.
                       Also when the owner held it already: a resent call, or a grant that
                       reached this owner before this call
    {0, pttl, nowMs}   not acquired: pttl is the remaining lease of the lock in milliseconds
                       (-1 without expiry; -2 when it is free but this call could not grant
                       it: more than 64 unreachable entries). In "wait" mode the owner is
                       queued (once) with the deadline nowMs + ARGV[5]
    error              WRONGTYPE when the lock key or the fence key holds another type (a fence
                       that is not a whole number); nothing is written then
]]
local lockKey, queueKey, deadlinesKey, fenceKey = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local publishCommand, grantPrefix, claimMs, fenceTtlMs = ARGV[1], ARGV[2], ARGV[3], ARGV[4]
local deadlineMs, queueTtlMs = tonumber(ARGV[5]), ARGV[6]
local owner, leaseMs, mode = ARGV[7], ARGV[8], ARGV[9]
local rcall = redis.call

local pttl = rcall('PTTL', lockKey)
-- relock gives every lock an expiry: a key without one may be someone else's value.
if pttl == -1 and rcall('TYPE', lockKey)['ok'] ~= 'hash' then
  return redis.error_reply('WRONGTYPE the lock key holds a value that is not a lock hash')
end

-- @include grant-next

-- Already this owner's: a resent call that went through, or a grant that came first.
if pttl ~= -2 and rcall('HEXISTS', lockKey, owner) == 1 then
  rcall('PEXPIRE', lockKey, leaseMs)
  return {1, rcall('GET', fenceKey), now()}
end

if pttl == -2 then
  local failed = readFence()
  if failed then
    return failed
  end
  local queued = rcall('LLEN', queueKey)
  if queued > 0 then
    local granted = grantNext()
    if granted and granted[1] == owner then
      rcall('PEXPIRE', lockKey, leaseMs)
      return {1, granted[2], nowMs}
    elseif granted then
      pttl = tonumber(claimMs)
    else
      queued = rcall('LLEN', queueKey)
    end
  end
  if pttl == -2 and queued == 0 then
    now()
    local token = nextToken()
    rcall('HSET', lockKey, owner, 1)
    rcall('PEXPIRE', lockKey, leaseMs)
    rcall('SET', fenceKey, token, 'PX', fenceTtlMs)
    return {1, token, nowMs}
  end
end

if mode == 'wait' then
  -- Idempotent: a resent join neither queues twice nor moves a deadline by more than the wait.
  local fresh = false
  if not rcall('ZSCORE', deadlinesKey, owner) then
    fresh = rcall('RPUSH', queueKey, owner) == 1
  end
  rcall('ZADD', deadlinesKey, now() + deadlineMs, owner)
  -- A new queue gets its lifetime here; from then on the heartbeats of live waiters keep it.
  if fresh then
    rcall('PEXPIRE', queueKey, queueTtlMs)
    rcall('PEXPIRE', deadlinesKey, queueTtlMs)
  end
end
return {0, pttl, now()}
