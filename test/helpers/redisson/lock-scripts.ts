// Lua for RLock and RFencedLock, written from Redisson's protocol (RedissonLock, RedissonFencedLock;
// layout and messages as in 3.2.0-4.7, the publish command as an argument since 3.22, the unlock
// latch since 3.24, fencing tokens since 3.19).

/**
 * Takes or re-enters a lock (RedissonLock.tryLockInnerAsync).
 * KEYS[1]  the lock hash <name>
 * ARGV[1]  the lease in ms; ARGV[2] the owner <uuid>:<threadId>
 * Returns nil when taken (the owner's count +1, PEXPIRE to the lease), else the hash's PTTL.
 */
export const LOCK_ACQUIRE = `
local lockKey = KEYS[1]
local leaseMs, owner = ARGV[1], ARGV[2]
local rcall = redis.call
if rcall('exists', lockKey) == 0 or rcall('hexists', lockKey, owner) == 1 then
  rcall('hincrby', lockKey, owner, 1)
  rcall('pexpire', lockKey, leaseMs)
  return nil
end
return rcall('pttl', lockKey)`;

/**
 * Takes or re-enters a fenced lock and draws a token (RedissonFencedLock.tryLockInnerAsync).
 * KEYS[1]  the lock hash <name>; KEYS[2] the token redisson_lock_token:{<name>} (no expiry)
 * ARGV[1]  the lease in ms; ARGV[2] the owner
 * Returns {-1, token} when taken (every acquisition, re-entries too, increments the token),
 * else {PTTL, -1}.
 */
export const FENCED_ACQUIRE = `
local lockKey, tokenKey = KEYS[1], KEYS[2]
local leaseMs, owner = ARGV[1], ARGV[2]
local rcall = redis.call
if rcall('exists', lockKey) == 0 or rcall('hexists', lockKey, owner) == 1 then
  local token = rcall('incr', tokenKey)
  rcall('hincrby', lockKey, owner, 1)
  rcall('pexpire', lockKey, leaseMs)
  return {-1, token}
end
return {rcall('pttl', lockKey), -1}`;

/**
 * Releases one hold (RedissonLock.unlockInnerAsync).
 * KEYS[1]  the lock hash; KEYS[2] the channel redisson_lock__channel:{<name>};
 * KEYS[3]  this request's latch redisson_unlock_latch:{<name>}:<request id>
 * ARGV[1]  the message 0; ARGV[2] the lease in ms kept on a partial release; ARGV[3] the owner;
 * ARGV[4]  PUBLISH or SPUBLISH; ARGV[5] the latch's life in ms
 * Returns the latch's value when this request already ran; nil when the owner holds nothing;
 * 0 still held (count -1, PEXPIRE to the lease); 1 released (hash deleted, 0 published).
 */
export const LOCK_UNLOCK = `
local lockKey, channel, latch = KEYS[1], KEYS[2], KEYS[3]
local message, leaseMs, owner, publish, latchMs = ARGV[1], ARGV[2], ARGV[3], ARGV[4], ARGV[5]
local rcall = redis.call
local done = rcall('get', latch)
if done then return tonumber(done) end
if rcall('hexists', lockKey, owner) == 0 then return nil end
if rcall('hincrby', lockKey, owner, -1) > 0 then
  rcall('pexpire', lockKey, leaseMs)
  rcall('set', latch, 0, 'px', latchMs)
  return 0
end
rcall('del', lockKey)
rcall(publish, channel, message)
rcall('set', latch, 1, 'px', latchMs)
return 1`;

/**
 * Deletes the lock whoever holds it (RedissonLock.forceUnlockAsync).
 * KEYS[1]  the lock hash; KEYS[2] its channel
 * ARGV[1]  the message 0; ARGV[2] PUBLISH or SPUBLISH
 * Returns 1 deleted and published, 0 when there was no lock.
 */
export const LOCK_FORCE_UNLOCK = `
local lockKey, channel = KEYS[1], KEYS[2]
local message, publish = ARGV[1], ARGV[2]
if redis.call('del', lockKey) == 1 then
  redis.call(publish, channel, message)
  return 1
end
return 0`;
