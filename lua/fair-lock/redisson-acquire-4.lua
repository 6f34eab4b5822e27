--[[
  Takes an RFairLock (the Redisson layout) for an owner, or queues it, as Redisson's fair lock
  does: the lock goes to a free lock's head waiter (or to anyone when nobody waits); a waiter
  joins the queue with a deadline (the caller's clock) by which it must come for the lock.

  Input:
    KEYS[1] the lock hash <name>: owner field -> hold count (RLock's)
    KEYS[2] queue: list redisson_lock_queue:{<name>} of waiting owners, oldest first
    KEYS[3] timeouts: zset redisson_lock_timeout:{<name>} owner -> deadline, epoch ms
    KEYS[4] fence key: redisson_lock_token:{<name>}, RFencedLock's counter (no expiry)
    ARGV[1] owner: "<clientId>:<n>", the same over the attempts of one acquire
    ARGV[2] lease in milliseconds
    ARGV[3] Redisson's fairLockWaitTimeout in milliseconds: how long a queued owner may take to
            come for the lock once the one before it could (every queued entry is spaced by it)
    ARGV[4] the caller's clock in epoch milliseconds (as Redisson's deadlines are)
    ARGV[5] "try": never queue (Redisson's tryLock() without a wait); "wait": queue when busy

  Output: one value
    token     acquired; the new token max(last + 1, Redis TIME in microseconds), a decimal
              string, written to the token key without expiry. Also when
              the owner holds it already: only an earlier run of this very call can have
              taken it (a resend); nothing else is written then
    {0, ms}   not acquired, queued (or, for "try", not queued): ms the lock's time to live
              (0: free, the head is taking it), or for a new waiter the time to the deadline of
              the one before it
    error     WRONGTYPE when a key holds another type or the fence key a string that is not
              a whole number; FENCEOVERFLOW at 2^53 - 1; nothing is written then

  Every acquisition lowers the deadlines of the waiters left by the wait, as Redisson's does.
]]
local lockKey, queueKey, timeoutsKey, fenceKey = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local owner, leaseMs, waitMs, nowMs, mode = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4]), ARGV[5]
local rcall = redis.call
local channelBase, publishCommand
local time = rcall('TIME')
local fenceTtlMs = 0

-- @include redisson-prune
-- @include shared/fence

-- Reads and checks the fence first: a script that fails half-way is not rolled back.
local failed = readFence()
if failed then
  return failed
end

prune()
if rcall('HEXISTS', lockKey, owner) == 1 then
  return nextToken()
end
if rcall('EXISTS', lockKey) == 0 and (rcall('EXISTS', queueKey) == 0 or rcall('LINDEX', queueKey, 0) == owner) then
  rcall('LPOP', queueKey)
  rcall('ZREM', timeoutsKey, owner)
  for _, waiter in ipairs(rcall('ZRANGE', timeoutsKey, 0, -1)) do
    rcall('ZINCRBY', timeoutsKey, -waitMs, waiter)
  end
  rcall('HSET', lockKey, owner, 1)
  rcall('PEXPIRE', lockKey, leaseMs)
  return nextToken()
end
if mode == 'try' or rcall('ZSCORE', timeoutsKey, owner) then
  return {0, math.max(0, rcall('PTTL', lockKey))}
end
local last = rcall('LINDEX', queueKey, -1)
local lastDeadline = last and rcall('ZSCORE', timeoutsKey, last)
local ttl
if lastDeadline then
  ttl = tonumber(lastDeadline) - nowMs
else
  ttl = rcall('PTTL', lockKey)
end
rcall('ZADD', timeoutsKey, ttl + waitMs + nowMs, owner)
rcall('RPUSH', queueKey, owner)
return {0, math.max(0, ttl)}
