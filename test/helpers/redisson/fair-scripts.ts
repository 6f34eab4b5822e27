// Lua for RFairLock, written from Redisson's protocol (RedissonFairLock, scripts as in 3.45.0-4.7,
// layout since 3.2.0): the lock hash as RLock's, list redisson_lock_queue:{<name>} of waiting owners,
// zset redisson_lock_timeout:{<name>} owner -> deadline (epoch ms of the CALLER's clock).

/** Drops waiters at the head whose deadline has passed (the others keep theirs). Needs queue, timeouts, nowMs, rcall. */
const PRUNE = `
while true do
  local head = rcall('lindex', queue, 0)
  if not head then break end
  local deadline = rcall('zscore', timeouts, head)
  if deadline and tonumber(deadline) <= nowMs then
    rcall('zrem', timeouts, head)
    rcall('lpop', queue)
  else
    break
  end
end`;

/** Takes a free lock for the head of the queue (or anyone when none waits), re-enters, or neither. */
const TAKE = `
if rcall('exists', lockKey) == 0 and (rcall('exists', queue) == 0 or rcall('lindex', queue, 0) == owner) then
  rcall('lpop', queue)
  rcall('zrem', timeouts, owner)
  for _, waiter in ipairs(rcall('zrange', timeouts, 0, -1)) do
    rcall('zincrby', timeouts, -waitMs, waiter)
  end
  rcall('hset', lockKey, owner, 1)
  rcall('pexpire', lockKey, leaseMs)
  return nil
end
if rcall('hexists', lockKey, owner) == 1 then
  rcall('hincrby', lockKey, owner, 1)
  rcall('pexpire', lockKey, leaseMs)
  return nil
end`;

/**
 * Takes the lock or joins the queue (RedissonFairLock.tryLockInnerAsync, EVAL_LONG: lock(), tryLock(wait)).
 * KEYS[1]  the lock hash; KEYS[2] the queue; KEYS[3] the deadlines zset
 * ARGV[1]  the lease in ms; ARGV[2] the owner; ARGV[3] the wait in ms (fairLockWaitTimeout, or
 *          tryLock's waitTime); ARGV[4] the caller's clock in epoch ms
 * Returns nil when taken (every other deadline lowered by the wait) or re-entered; a queued owner
 * gets max(0, PTTL); a new one is appended with deadline = the last waiter's + wait (the first:
 * now + PTTL + wait) and gets its time to that last waiter's deadline (or the PTTL).
 */
export const FAIR_ACQUIRE = `
local lockKey, queue, timeouts = KEYS[1], KEYS[2], KEYS[3]
local leaseMs, owner, waitMs, nowMs = ARGV[1], ARGV[2], tonumber(ARGV[3]), tonumber(ARGV[4])
local rcall = redis.call
${PRUNE}
${TAKE}
if rcall('zscore', timeouts, owner) then
  return math.max(0, rcall('pttl', lockKey))
end
local last = rcall('lindex', queue, -1)
local lastDeadline = last and last ~= owner and rcall('zscore', timeouts, last)
local ttl
if lastDeadline then
  ttl = tonumber(lastDeadline) - nowMs
else
  ttl = rcall('pttl', lockKey)
end
if rcall('zadd', timeouts, ttl + waitMs + nowMs, owner) == 1 then
  rcall('rpush', queue, owner)
end
return ttl`;

/**
 * tryLock()'s one attempt, which never joins the queue (RedissonFairLock.tryLockInnerAsync, EVAL_NULL_BOOLEAN).
 * KEYS[1]  the lock hash; KEYS[2] the queue; KEYS[3] the deadlines zset
 * ARGV[1]  the lease in ms; ARGV[2] the owner; ARGV[3] the caller's clock in epoch ms; ARGV[4] the wait in ms
 * Returns nil when taken or re-entered, else 1.
 */
export const FAIR_TRY = `
local lockKey, queue, timeouts = KEYS[1], KEYS[2], KEYS[3]
local leaseMs, owner, nowMs, waitMs = ARGV[1], ARGV[2], tonumber(ARGV[3]), tonumber(ARGV[4])
local rcall = redis.call
${PRUNE}
${TAKE}
return 1`;

/**
 * Releases one hold (RedissonFairLock.unlockInnerAsync); a full release (or one of an absent lock)
 * publishes 0 to the head waiter's own channel only.
 * KEYS[1]  the lock hash; KEYS[2] the queue; KEYS[3] the deadlines zset;
 * KEYS[4]  redisson_lock__channel:{<name>} (the head's channel is this plus :<owner>); KEYS[5] the latch
 * ARGV[1]  the message 0; ARGV[2] the lease in ms kept on a partial release; ARGV[3] the owner;
 * ARGV[4]  the caller's clock in epoch ms; ARGV[5] PUBLISH or SPUBLISH; ARGV[6] the latch's life in ms
 * Returns the latch's value on a repeat; 1 released (or no lock); 0 still held; nil not held by the owner.
 */
export const FAIR_UNLOCK = `
local lockKey, queue, timeouts, channel, latch = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5]
local message, leaseMs, owner, nowMs, publish, latchMs = ARGV[1], ARGV[2], ARGV[3], tonumber(ARGV[4]), ARGV[5], ARGV[6]
local rcall = redis.call
local done = rcall('get', latch)
if done then return tonumber(done) end
${PRUNE}
local function wakeHead()
  local head = rcall('lindex', queue, 0)
  if head then rcall(publish, channel .. ':' .. head, message) end
end
if rcall('exists', lockKey) == 0 then
  wakeHead()
  rcall('set', latch, 1, 'px', latchMs)
  return 1
end
if rcall('hexists', lockKey, owner) == 0 then return nil end
if rcall('hincrby', lockKey, owner, -1) > 0 then
  rcall('pexpire', lockKey, leaseMs)
  rcall('set', latch, 0, 'px', latchMs)
  return 0
end
rcall('del', lockKey)
rcall('set', latch, 1, 'px', latchMs)
wakeHead()
return 1`;

/**
 * Deletes the lock whoever holds it and wakes the head waiter (RedissonFairLock.forceUnlockAsync).
 * KEYS[1]  the lock hash; KEYS[2] the queue; KEYS[3] the deadlines zset; KEYS[4] the channel prefix
 * ARGV[1]  the message 0; ARGV[2] the caller's clock in epoch ms; ARGV[3] PUBLISH or SPUBLISH
 * Returns 1 deleted, 0 no lock.
 */
export const FAIR_FORCE_UNLOCK = `
local lockKey, queue, timeouts, channel = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local message, nowMs, publish = ARGV[1], tonumber(ARGV[2]), ARGV[3]
local rcall = redis.call
${PRUNE}
if rcall('del', lockKey) == 1 then
  local head = rcall('lindex', queue, 0)
  if head then rcall(publish, channel .. ':' .. head, message) end
  return 1
end
return 0`;

/**
 * A tryLock out of time leaves the queue (RedissonFairLock.acquireFailedAsync): the waiters behind it
 * get their deadlines lowered by the wait.
 * KEYS[1]  the queue; KEYS[2] the deadlines zset
 * ARGV[1]  the owner; ARGV[2] the wait in ms
 * Returns nothing.
 */
export const FAIR_LEAVE = `
local queue, timeouts = KEYS[1], KEYS[2]
local owner, waitMs = ARGV[1], tonumber(ARGV[2])
local rcall = redis.call
local behind = false
for _, waiter in ipairs(rcall('lrange', queue, 0, -1)) do
  if behind then rcall('zincrby', timeouts, -waitMs, waiter) end
  if waiter == owner then behind = true end
end
rcall('zrem', timeouts, owner)
rcall('lrem', queue, 0, owner)`;
