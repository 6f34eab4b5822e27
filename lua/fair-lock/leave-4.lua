--[[
  Takes an owner that stopped waiting (aborted, timed out, or its client closed) out of the queue.
  If the lock was granted to it meanwhile, the grant is handed on to the next in the queue: an
  abandoned grant is passed on here and nowhere else. A free lock with a queue is pumped.

  Input:
    KEYS[1] lock key: hash of owner field -> hold count (a grant's claim, then its lease)
    KEYS[2] queue key: list of waiting owner fields, oldest first
    KEYS[3] deadlines key: zset of waiting owner field -> Redis TIME in milliseconds by which
            its client must heartbeat again
    KEYS[4] fence key: string, the last fencing token issued for this lock
    ARGV[1] publish command: "publish" or "spublish"
    ARGV[2] grant channel prefix: a grant is published on this + the grantee's client id
    ARGV[3] claim in milliseconds: the lease of a granted lock until its waiter confirms it
    ARGV[4] time to live of the fence key in milliseconds (at least the claim, for a grant)
    ARGV[5] owner field: "<clientId>:<contextId>"

  Output: an array
    {held, nowMs}                  held = 1 when the owner held the lock (granted meanwhile)
                                   and it was given up, else 0; nowMs = Redis TIME in ms;
                                   nobody was granted the lock
    {held, nowMs, grantee, token}  and the lock was granted to the owner field grantee with
                                   the fencing token (a decimal string)
    error                          WRONGTYPE when a key holds another type, FENCEOVERFLOW
                                   when the fence holds 2^53 - 1 or more; nothing is written
]]
local lockKey, queueKey, deadlinesKey, fenceKey = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local publishCommand, grantPrefix, claimMs, fenceTtlMs = ARGV[1], ARGV[2], ARGV[3], ARGV[4]
local owner = ARGV[5]
local rcall = redis.call
local time, nowMs

local held = rcall('HEXISTS', lockKey, owner)
local queued = rcall('LLEN', queueKey)

-- @include shared/fence
-- @include grant-next

local failed = readFence()
if failed then
  return failed
end
rcall('ZREM', deadlinesKey, owner, HEARTBEAT_MARK .. owner)
if queued > 0 then
  rcall('LREM', queueKey, 0, owner)
end
local granted = nil
if held == 1 then
  rcall('DEL', lockKey)
  granted = grantNext()
elseif queued > 0 and rcall('EXISTS', lockKey) == 0 then
  granted = grantNext()
end
if granted then
  return {held, nowMs, granted[1], granted[2]}
end
return {held, now()}
