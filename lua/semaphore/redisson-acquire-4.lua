--[[
  Takes permits of an RPermitExpirableSemaphore (the Redisson layout) for a new lease: one
  permit id per permit, "<owner>:<i>", each expiring at the lease end.

  Input:
    KEYS[1] the count of available permits: string <name> (Redisson's trySetPermits value)
    KEYS[2] timeouts: zset {<name>}:timeout of permit id -> expiry in epoch ms (Redis TIME here)
    KEYS[3] fence key: a counter without expiry, {<name>}:fence (relock's own: Redisson's
            semaphore has no tokens)
    KEYS[4] channel redisson_sc:{<name>} (declared as a key so sharded pub/sub can use it)
    ARGV[1] owner: "<clientId>:<n>", new for every attempt
    ARGV[2] permits this lease takes, from 1 to the limit
    ARGV[3] the limit the caller's semaphore was made with
    ARGV[4] lease in milliseconds
    ARGV[5] publish command: "publish" or "spublish"

  Output: an array
    {1, token}   acquired; token (a decimal string) max(last + 1, Redis TIME in microseconds),
                 the counter keeping no expiry.
                 Also when the owner's first permit is there already: only an earlier run of
                 this very call can have added it (a resend); nothing else is written then
    {0, waitMs}  not acquired: too few permits are available; waitMs until the earliest
                 permit expiry, or -1 when every held permit is Java's without expiry
    {-1, "total"} not acquired: the permits available plus those held are total, not the
                 limit (Java set another number of permits); nothing is written
    error        WRONGTYPE when a key holds another type or the fence key a string that is not a
                 whole number; FENCEOVERFLOW at 2^53 - 1

  When the count is absent, it is set to the limit less the permits held (as trySetPermits
  would), and published. Expired permits are given back first, as Redisson does.
]]
local counterKey, timeoutsKey, fenceKey, channel = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local owner, permits, limit, leaseMs, publishCommand = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4]), ARGV[5]
local rcall = redis.call

local fenceTtlMs = 0

-- @include redisson-reclaim
-- @include shared/fence

-- Reads and checks the fence first: a script that fails half-way is not rolled back.
local failed = readFence()
if failed then
  return failed
end

if rcall('ZSCORE', timeoutsKey, owner .. ':1') then
  return {1, nextToken()}
end
reclaim()
local held = rcall('ZCARD', timeoutsKey)
local available = tonumber(rcall('GET', counterKey))
if not available then
  available = math.max(0, limit - held)
  rcall('SET', counterKey, available)
  if available > 0 then
    rcall(publishCommand, channel, available)
  end
end
if available + held ~= limit then
  return {-1, string.format('%d', available + held)}
end
if available < permits then
  local nearest = rcall('ZRANGE', timeoutsKey, 0, 0, 'WITHSCORES')
  if nearest[2] and tonumber(nearest[2]) < NEVER then
    return {0, math.max(0, tonumber(nearest[2]) - nowMs)}
  end
  return {0, -1}
end
rcall('DECRBY', counterKey, permits)
local endsAt = nowMs + leaseMs
for i = 1, permits do
  rcall('ZADD', timeoutsKey, endsAt, owner .. ':' .. i)
end
return {1, nextToken()}
