--[[
  Takes a waiter out of an RFairLock's queue (the Redisson layout) when its wait ended without the
  lock, as Redisson's acquireFailed does: the waiters behind it get their deadlines lowered by the
  wait. When that leaves a free lock to a new head, the head is woken (Redisson leaves it to poll).

  Input:
    KEYS[1] the lock hash <name>
    KEYS[2] queue: list redisson_lock_queue:{<name>}
    KEYS[3] timeouts: zset redisson_lock_timeout:{<name>}
    KEYS[4] channel base redisson_lock__channel:{<name>}
    ARGV[1] owner: "<clientId>:<n>"
    ARGV[2] the wait in milliseconds it queued with
    ARGV[3] publish command: "publish" or "spublish"

  Output: an integer
    1  it was queued and left
    0  it was not queued
]]
local lockKey, queueKey, timeoutsKey, channelBase = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local owner, waitMs, publishCommand = ARGV[1], tonumber(ARGV[2]), ARGV[3]
local rcall = redis.call
local nowMs

-- @include redisson-prune

local queued = rcall('LRANGE', queueKey, 0, -1)
local behind = false
for _, waiter in ipairs(queued) do
  if behind then
    rcall('ZINCRBY', timeoutsKey, -waitMs, waiter)
  end
  if waiter == owner then
    behind = true
  end
end
rcall('ZREM', timeoutsKey, owner)
if not behind then
  return 0
end
local wasHead = queued[1] == owner
rcall('LREM', queueKey, 0, owner)
if wasHead and rcall('EXISTS', lockKey) == 0 then
  wakeHead()
end
return 1
