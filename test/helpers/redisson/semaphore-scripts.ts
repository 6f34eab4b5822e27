// Lua for RPermitExpirableSemaphore, written from Redisson's protocol (permit ids as raw bytes since
// 3.17, scripts as in 3.52-4.7): string <name> = permits available, zset {<name>}:timeout of permit
// id -> expiry in epoch ms (922337203685477 = none), channel redisson_sc:{<name>} carrying counts.

/** Redisson's "no expiry" score (RedissonPermitExpirableSemaphore.nonExpirableTimeout). */
export const NON_EXPIRABLE = 922337203685477;

/** Gives back up to `limit` expired permits (-1: all) and publishes the new count when positive. Needs counter, timeouts, channel, nowMs, publish, rcall. */
const RECLAIM = `
local function reclaim(limit)
  local expired = rcall('zrangebyscore', timeouts, 0, nowMs, 'limit', 0, limit)
  if #expired > 0 then
    rcall('zrem', timeouts, unpack(expired))
    local available = rcall('incrby', counter, #expired)
    if available > 0 then rcall(publish, channel, available) end
  end
end`;

/**
 * Takes n permits (RedissonPermitExpirableSemaphore.tryAcquireAsync); first gives back up to n
 * expired ones.
 * KEYS[1]  the count <name>; KEYS[2] the zset {<name>}:timeout; KEYS[3] redisson_sc:{<name>}
 * ARGV[1]  n; ARGV[2] the permits' expiry in epoch ms (or NON_EXPIRABLE); ARGV[3] the caller's clock
 *          in epoch ms; ARGV[4] NON_EXPIRABLE; ARGV[5] PUBLISH or SPUBLISH; ARGV[6..] n raw 16-byte ids
 * Returns 'OK' when taken (the zset takes the count's expiry if it has one); else ':<epoch ms>', the
 * nearest expiry of a held permit, or nil when none expires.
 */
export const PERMIT_ACQUIRE = `
local counter, timeouts, channel = KEYS[1], KEYS[2], KEYS[3]
local n, expiresAt, nowMs, never, publish = tonumber(ARGV[1]), ARGV[2], ARGV[3], tonumber(ARGV[4]), ARGV[5]
local rcall = redis.call
${RECLAIM}
reclaim(n)
local available = tonumber(rcall('get', counter))
if available and available >= n then
  rcall('decrby', counter, n)
  for i = 6, #ARGV do rcall('zadd', timeouts, expiresAt, ARGV[i]) end
  local ttl = rcall('pttl', counter)
  if ttl > 0 then rcall('pexpire', timeouts, ttl) end
  return 'OK'
end
local nearest = rcall('zrange', timeouts, 0, 0, 'WITHSCORES')
if nearest[1] and tonumber(nearest[2]) ~= never then return ':' .. nearest[2] end
return nil`;

/**
 * Gives one permit back (RedissonPermitExpirableSemaphore.tryReleaseAsync) and publishes the new count.
 * KEYS[1]  the count; KEYS[2] redisson_sc:{<name>}; KEYS[3] the zset
 * ARGV[1]  the raw id; ARGV[2] 1; ARGV[3] the caller's clock in epoch ms; ARGV[4] PUBLISH or SPUBLISH
 * Returns 1 released; 0 unknown id, or an expired one (still given back).
 */
export const PERMIT_RELEASE = `
local counter, channel, timeouts = KEYS[1], KEYS[2], KEYS[3]
local id, n, nowMs, publish = ARGV[1], ARGV[2], tonumber(ARGV[3]), ARGV[4]
local rcall = redis.call
local expiresAt = rcall('zscore', timeouts, id)
if rcall('zrem', timeouts, id) ~= 1 then return 0 end
rcall(publish, channel, rcall('incrby', counter, n))
if tonumber(expiresAt) <= nowMs then return 0 end
return 1`;

/**
 * Sets the count when the semaphore does not exist (trySetPermitsAsync).
 * KEYS[1]  the count; KEYS[2] redisson_sc:{<name>}
 * ARGV[1]  the permits; ARGV[2] PUBLISH or SPUBLISH
 * Returns 1 set (and published), 0 when it existed.
 */
export const PERMIT_TRY_SET = `
local counter, channel = KEYS[1], KEYS[2]
local permits, publish = ARGV[1], ARGV[2]
if redis.call('get', counter) then return 0 end
redis.call('set', counter, permits)
redis.call(publish, channel, permits)
return 1`;

/**
 * The permits available after giving back every expired one (availablePermitsAsync).
 * KEYS[1]  the count; KEYS[2] the zset; KEYS[3] redisson_sc:{<name>}
 * ARGV[1]  the caller's clock in epoch ms; ARGV[2] PUBLISH or SPUBLISH
 * Returns the count (0 when absent).
 */
export const PERMIT_AVAILABLE = `
local counter, timeouts, channel = KEYS[1], KEYS[2], KEYS[3]
local nowMs, publish = ARGV[1], ARGV[2]
local rcall = redis.call
${RECLAIM}
reclaim(-1)
return tonumber(rcall('get', counter) or 0)`;
