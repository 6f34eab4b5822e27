--[[
  Releases one hold of an RFairLock (the Redisson layout), or all of them; the last one deletes
  the lock and publishes 0 on the head waiter's own channel only, as Redisson's does.

  Input:
    KEYS[1] the lock hash <name>
    KEYS[2] queue: list redisson_lock_queue:{<name>}
    KEYS[3] timeouts: zset redisson_lock_timeout:{<name>}
    KEYS[4] channel base redisson_lock__channel:{<name>}: the head's channel is it plus
            ":<owner>" (declared as a key so sharded pub/sub can use it)
    ARGV[1] owner: "<clientId>:<n>"
    ARGV[2] the hold count the caller believes it has before this release (>= 1)
    ARGV[3] "1": release the whole hold whatever its count; "0": one level
    ARGV[4] publish command: "publish" or "spublish"
    ARGV[5] the caller's clock in epoch milliseconds

  Output: an integer
    -1   the owner holds nothing here (when nobody does, the head waiter is woken)
    n>=0 the owner's hold count after this call; 0: released, the head waiter woken. Below
         what the caller believes (one level): a retry of a release that went through
]]
local lockKey, queueKey, timeoutsKey, channelBase = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local owner, believed, whole, publishCommand, nowMs = ARGV[1], tonumber(ARGV[2]), ARGV[3], ARGV[4], tonumber(ARGV[5])
local rcall = redis.call

-- @include redisson-prune
-- @include shared/release-level

prune()
local count = rcall('HGET', lockKey, owner)
if not count then
  if rcall('EXISTS', lockKey) == 0 then
    wakeHead()
  end
  return -1
end
local left = releaseLevel(lockKey, owner, tonumber(count), believed, whole)
if left then
  return left
end
rcall('DEL', lockKey)
wakeHead()
return 0
