--[[
  Releases one hold of an owner, or all of them; on the last one deletes the lock and publishes
  (unless told not to: a Redlock release publishes on a majority of its masters only).

  Input:
    KEYS[1] lock key: hash of owner field -> hold count
    KEYS[2] release channel (declared as a key so sharded pub/sub can use it)
    ARGV[1] owner field: "<clientId>:<contextId>"
    ARGV[2] the hold count the caller believes it has before this release (>= 1)
    ARGV[3] "1": release the owner's whole hold whatever its count (the outermost
            lease); "0": one level
    ARGV[4] publish command: "publish" or "spublish", or "" to publish nothing
    ARGV[5] message to publish
    ARGV[6] optional, a job's end (src/job/): the least life of the hold in milliseconds from its
            start (atLeastMs). Where the whole hold goes and that time has not passed, the lock stays
            taken until it has: its hash then holds the one field "window" (no owner field has no
            ":") and expires then. Absent or "": a plain release
    ARGV[7] with ARGV[6], the hold's fencing token: its start in Redis TIME microseconds (a token is
            max(last + 1, TIME), issued by the acquisition, so never before it; the start taken is
            the earlier of it and now)

  Output: an integer
    -1   the owner holds nothing here (expired, force-unlocked, or never held)
    n>=0 the owner's hold count after this call; 0 means the lock was deleted (or, with
         ARGV[6], left to its window) and the channel published (if asked). When the count is already below what the caller
         believes (one level), this is a retry of a release that went through:
         nothing changes.
]]
local lockKey, channel = KEYS[1], KEYS[2]
local owner, believed, whole, publishCommand, message = ARGV[1], tonumber(ARGV[2]), ARGV[3], ARGV[4], ARGV[5]
local keepMs, startToken = ARGV[6], ARGV[7]
local rcall = redis.call

-- @include shared/release-level

local count = rcall('HGET', lockKey, owner)
if not count then
  return -1
end
count = tonumber(count)
local left = releaseLevel(lockKey, owner, count, believed, whole)
if left then
  return left
end
-- Publish first: Redis checks ACLs per command and does not roll a script back, so a user who
-- may not publish fails here with nothing changed. Nobody hears it before the script ends.
if publishCommand ~= '' then
  rcall(publishCommand, channel, message)
end
rcall('DEL', lockKey)
if keepMs and keepMs ~= '' then
-- @include shared/now
  local startMs = math.min(math.floor(tonumber(startToken) / 1000), nowMs)
  local leftMs = startMs + tonumber(keepMs) - nowMs
  if leftMs > 0 then
    -- Waiters woken above try again and find it taken for leftMs.
    rcall('HSET', lockKey, 'window', 1)
    rcall('PEXPIRE', lockKey, leftMs)
  end
end
return 0
