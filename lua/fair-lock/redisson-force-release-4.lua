--[[
  Force-unlocks an RFairLock (the Redisson layout) whoever holds it, and wakes the head waiter,
  as Redisson's forceUnlock does.

  Input:
    KEYS[1] the lock hash <name>
    KEYS[2] queue: list redisson_lock_queue:{<name>}
    KEYS[3] timeouts: zset redisson_lock_timeout:{<name>}
    KEYS[4] channel base redisson_lock__channel:{<name>}
    ARGV[1] publish command: "publish" or "spublish"
    ARGV[2] the caller's clock in epoch milliseconds

  Output: an integer
    1  the lock was deleted
    0  there was no lock
]]
local lockKey, queueKey, timeoutsKey, channelBase = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local publishCommand, nowMs = ARGV[1], tonumber(ARGV[2])
local rcall = redis.call

-- @include redisson-prune

prune()
if rcall('DEL', lockKey) == 0 then
  return 0
end
wakeHead()
return 1
