--[[
  Takes permits of a semaphore for a new lease, when that many are free under its limit.

  Input:
    KEYS[1] semaphore key: hash of "limit" -> the limit, "held" -> permits held by live
            leases, and "<owner>" -> the permits of that lease
    KEYS[2] leases key: zset of owner field -> lease end, Redis TIME in milliseconds
    KEYS[3] fence key: string, the last fencing token issued for this semaphore
    KEYS[4] release channel (declared as a key so sharded pub/sub can use it)
    ARGV[1] owner field: "<clientId>:<leaseId>", new for every attempt
    ARGV[2] permits this lease takes, a whole number from 1 to the limit
    ARGV[3] the limit the caller's semaphore was made with
    ARGV[4] lease in milliseconds
    ARGV[5] time to live of the fence key in milliseconds (at least the lease)
    ARGV[6] publish command: "publish" or "spublish"

  Output: an array
    {1, token}      acquired; token is the new fencing token: max(last + 1, Redis TIME in
                    microseconds), a decimal string. Also when the owner holds a live lease
                    already: only an earlier run of this very call can have written its field
                    (the client sent it twice after a connection closed), so the lease is this
                    call's; it gets a new token, and nothing else is written
    {0, waitMs}     not acquired: too few permits are free; waitMs until the earliest live
                    lease ends, or -1 when no lease is known
    {-1, "limit"}   not acquired: live leases hold the semaphore under another limit, the
                    one returned; nothing is written
    error           WRONGTYPE when a key holds another type, or the fence key a string that
                    is not a whole number; FENCEOVERFLOW when the fence is at 2^53 - 1 or
                    above; nothing is written then

  Leases that ended are pruned. When that frees permits this attempt leaves free (it took
  some or none), the number that came free is published on the channel, so that waiters
  elsewhere take them. Both keys live until the latest lease end plus SLACK_MS.
]]
local semKey, leasesKey, fenceKey, channel = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local owner, permitsArg, limitArg, leaseMs, fenceTtlMs, publishCommand = ARGV[1], ARGV[2], ARGV[3], ARGV[4], ARGV[5], ARGV[6]
local rcall = redis.call
local permits, limit = tonumber(permitsArg), tonumber(limitArg)

-- @include prune
-- @include shared/fence

-- Every read before any write: a key of another type fails here, with nothing changed.
local state = rcall('HMGET', semKey, 'limit', 'held', owner)
local stored = tonumber(state[1])
local expired, freed, earliest = ended()
local held = math.max(0, tonumber(state[2] or '0') - freed)

-- The limit is stored while a lease lives: a user with another one is refused, not obeyed.
if held > 0 and stored and stored ~= limit then
  return {-1, state[1]}
end
local function live(field)
  for _, gone in ipairs(expired) do
    if gone == field then
      return false
    end
  end
  return true
end
if state[3] and live(owner) then
  local failed = readFence()
  if failed then
    return failed
  end
  return {1, nextToken()}
end
if held + permits > limit then
  if freed > 0 then
    rcall(publishCommand, channel, freed)
    prune(expired)
    rcall('HSET', semKey, 'held', string.format('%d', held))
  end
  if earliest then
    return {0, earliest - nowMs}
  end
  return {0, -1}
end

local failed = readFence()
if failed then
  return failed
end

-- Permits the pruning freed that this lease leaves free are someone else's to take. The message
-- counts every permit that came free, this lease's too: its own client's queue may still hold the
-- waiter that sent it, and a wake-up of that waiter must not be one taken from the others.
if freed > 0 and held + permits < limit then
  rcall(publishCommand, channel, freed)
end
prune(expired)
local ends = nowMs + tonumber(leaseMs)
-- The keys live until the latest lease end, plus the slack: with leases held before, that may be
-- another lease's end (a longer fixed lease).
local latest = ends
if held > 0 then
  local longest = rcall('ZRANGE', leasesKey, -1, -1, 'WITHSCORES')
  latest = math.max(ends, tonumber(longest[2] or '0'))
end
rcall('HSET', semKey, owner, permitsArg, 'limit', limitArg, 'held', string.format('%d', held + permits))
rcall('ZADD', leasesKey, string.format('%d', ends), owner)
local ttl = string.format('%d', latest - nowMs + SLACK_MS)
rcall('PEXPIRE', semKey, ttl)
rcall('PEXPIRE', leasesKey, ttl)

return {1, nextToken()}
