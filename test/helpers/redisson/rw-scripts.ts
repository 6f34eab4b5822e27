// Lua for RReadWriteLock, written from Redisson's protocol (RedissonReadLock/RedissonWriteLock, as in
// 3.44.0-4.7): hash <name> with field mode, readers <uuid>:<tid>, writer <uuid>:<tid>:write; per read
// hold n a string {<name>}:<uuid>:<tid>:rwlock_timeout:<n> with that hold's lease.

/**
 * Takes or re-enters a read hold (RedissonReadLock.tryLockInnerAsync): when free, when in read mode
 * (readers barge past waiting writers), or when the thread holds the write lock (downgrade).
 * KEYS[1]  the hash; KEYS[2] the thread's timeout prefix {<name>}:<owner>:rwlock_timeout
 * ARGV[1]  the lease in ms; ARGV[2] the owner <uuid>:<tid>; ARGV[3] the same thread's writer field
 * Returns nil when taken (count +1, timeout key :<count> with the lease, hash expiry at least the
 * lease), else the hash's PTTL.
 */
export const READ_ACQUIRE = `
local lockKey, timeoutPrefix = KEYS[1], KEYS[2]
local leaseMs, owner, writer = tonumber(ARGV[1]), ARGV[2], ARGV[3]
local rcall = redis.call
local mode = rcall('hget', lockKey, 'mode')
if not mode then
  rcall('hset', lockKey, 'mode', 'read', owner, 1)
  rcall('set', timeoutPrefix .. ':1', 1, 'px', leaseMs)
  rcall('pexpire', lockKey, leaseMs)
  return nil
end
if mode == 'read' or (mode == 'write' and rcall('hexists', lockKey, writer) == 1) then
  local holds = rcall('hincrby', lockKey, owner, 1)
  rcall('set', timeoutPrefix .. ':' .. holds, 1, 'px', leaseMs)
  rcall('pexpire', lockKey, math.max(rcall('pttl', lockKey), leaseMs))
  return nil
end
return rcall('pttl', lockKey)`;

/**
 * Releases one read hold (RedissonReadLock.unlockInnerAsync). The hash stays while any remaining
 * reader's rwlock_timeout key lives (expiry set to the longest) or a writer holds it; else it is
 * deleted and 0 published.
 * KEYS[1]  the hash; KEYS[2] redisson_rwlock:{<name>}; KEYS[3] the thread's timeout prefix;
 * KEYS[4]  the key prefix {<name>}; KEYS[5] the unlock latch
 * ARGV[1]  the message 0; ARGV[2] the owner; ARGV[3] PUBLISH or SPUBLISH; ARGV[4] the latch's life in ms
 * Returns the latch's value on a repeat; nil not held (an absent lock also publishes 0); 0 the hash
 * stays; 1 deleted.
 */
export const READ_UNLOCK = `
local lockKey, channel, timeoutPrefix, keyPrefix, latch = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5]
local message, owner, publish, latchMs = ARGV[1], ARGV[2], ARGV[3], ARGV[4]
local rcall = redis.call
local done = rcall('get', latch)
if done then return tonumber(done) end
local mode = rcall('hget', lockKey, 'mode')
if not mode then
  rcall(publish, channel, message)
  rcall('set', latch, 1, 'px', latchMs)
  return nil
end
if rcall('hexists', lockKey, owner) == 0 then return nil end
local holds = rcall('hincrby', lockKey, owner, -1)
if holds == 0 then rcall('hdel', lockKey, owner) end
rcall('del', timeoutPrefix .. ':' .. (holds + 1))
if rcall('hlen', lockKey) > 1 then
  local longestMs = -3
  for _, field in ipairs(rcall('hkeys', lockKey)) do
    local count = tonumber(rcall('hget', lockKey, field))
    if count then
      for n = count, 1, -1 do
        longestMs = math.max(longestMs, rcall('pttl', keyPrefix .. ':' .. field .. ':rwlock_timeout:' .. n))
      end
    end
  end
  if longestMs > 0 or mode == 'write' then
    if longestMs > 0 then rcall('pexpire', lockKey, longestMs) end
    rcall('set', latch, 0, 'px', latchMs)
    return 0
  end
end
rcall('del', lockKey)
rcall(publish, channel, message)
rcall('set', latch, 1, 'px', latchMs)
return 1`;

/**
 * Takes or re-enters the write lock (RedissonWriteLock.tryLockInnerAsync). A re-entry ADDS the lease
 * to the remaining expiry.
 * KEYS[1]  the hash
 * ARGV[1]  the lease in ms; ARGV[2] the writer field <uuid>:<tid>:write
 * Returns nil when taken, else the hash's PTTL.
 */
export const WRITE_ACQUIRE = `
local lockKey = KEYS[1]
local leaseMs, writer = tonumber(ARGV[1]), ARGV[2]
local rcall = redis.call
local mode = rcall('hget', lockKey, 'mode')
if not mode then
  rcall('hset', lockKey, 'mode', 'write', writer, 1)
  rcall('pexpire', lockKey, leaseMs)
  return nil
end
if mode == 'write' and rcall('hexists', lockKey, writer) == 1 then
  rcall('hincrby', lockKey, writer, 1)
  rcall('pexpire', lockKey, rcall('pttl', lockKey) + leaseMs)
  return nil
end
return rcall('pttl', lockKey)`;

/**
 * Releases one write hold (RedissonWriteLock.unlockInnerAsync). The last one deletes the hash and
 * publishes 1, unless the thread's read holds remain: then mode turns to read and nothing is published.
 * KEYS[1]  the hash; KEYS[2] redisson_rwlock:{<name>}; KEYS[3] the unlock latch
 * ARGV[1]  the message 1; ARGV[2] the lease in ms kept on a partial release; ARGV[3] the writer field;
 * ARGV[4]  PUBLISH or SPUBLISH; ARGV[5] the latch's life in ms
 * Returns the latch's value on a repeat; nil not held (an absent lock also publishes 1); 0 still
 * held; 1 released.
 */
export const WRITE_UNLOCK = `
local lockKey, channel, latch = KEYS[1], KEYS[2], KEYS[3]
local message, leaseMs, writer, publish, latchMs = ARGV[1], ARGV[2], ARGV[3], ARGV[4], ARGV[5]
local rcall = redis.call
local done = rcall('get', latch)
if done then return tonumber(done) end
local mode = rcall('hget', lockKey, 'mode')
if not mode then
  rcall(publish, channel, message)
  rcall('set', latch, 1, 'px', latchMs)
  return nil
end
if mode ~= 'write' or rcall('hexists', lockKey, writer) == 0 then return nil end
if rcall('hincrby', lockKey, writer, -1) > 0 then
  rcall('pexpire', lockKey, leaseMs)
  rcall('set', latch, 0, 'px', latchMs)
  return 0
end
rcall('hdel', lockKey, writer)
if rcall('hlen', lockKey) == 1 then
  rcall('del', lockKey)
  rcall(publish, channel, message)
else
  rcall('hset', lockKey, 'mode', 'read')
end
rcall('set', latch, 1, 'px', latchMs)
return 1`;

/**
 * Deletes the hash when it is in the given mode (RedissonReadLock/RedissonWriteLock.forceUnlockAsync).
 * KEYS[1]  the hash; KEYS[2] redisson_rwlock:{<name>}
 * ARGV[1]  the message (0 read, 1 write); ARGV[2] PUBLISH or SPUBLISH; ARGV[3] the mode, read or write
 * Returns 1 deleted and published, else 0.
 */
export const RW_FORCE_UNLOCK = `
local lockKey, channel = KEYS[1], KEYS[2]
local message, publish, mode = ARGV[1], ARGV[2], ARGV[3]
if redis.call('hget', lockKey, 'mode') == mode then
  redis.call('del', lockKey)
  redis.call(publish, channel, message)
  return 1
end
return 0`;

/**
 * Whether the read side counts as locked (RedissonReadLock.isLocked): read mode, or write mode with
 * some read hold besides the writer's field.
 * KEYS[1]  the hash
 * Returns 1 or 0.
 */
export const READ_IS_LOCKED = `
local mode = redis.call('hget', KEYS[1], 'mode')
if mode == 'read' or (mode == 'write' and redis.call('hlen', KEYS[1]) > 2) then return 1 end
return 0`;
