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

  Output: an integer
    -1   the owner holds nothing here (expired, force-unlocked, or never held)
    n>=0 the owner's hold count after this call; 0 means the lock was deleted and
         the channel published (if asked). When the count is already below what the caller
         believes (one level), this is a retry of a release that went through:
         nothing changes.
]]
local lockKey, channel = KEYS[1], KEYS[2]
local owner, believed, whole, publishCommand, message = ARGV[1], tonumber(ARGV[2]), ARGV[3], ARGV[4], ARGV[5]
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
return 0
