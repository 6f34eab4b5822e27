--[[
  Deletes the fair lock whoever holds it, and grants it to the head of the queue.

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

  Output: an integer
    1      the lock existed and was deleted (and granted on, when someone could be reached)
    0      nothing was locked (a queue behind a free lock was pumped)
    error  WRONGTYPE when the lock key holds something that is not a lock hash (it is left
           alone), or, with a queue, when the fence key is not a whole number; FENCEOVERFLOW
           with a queue when the fence holds 2^53 - 1 or more; nothing is written then
]]
local lockKey, queueKey, deadlinesKey, fenceKey = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local publishCommand, grantPrefix, claimMs, fenceTtlMs = ARGV[1], ARGV[2], ARGV[3], ARGV[4]
local rcall = redis.call
local time, nowMs

local kind = rcall('TYPE', lockKey)['ok']
if kind ~= 'none' and kind ~= 'hash' then
  return redis.error_reply('WRONGTYPE the key holds a ' .. kind .. ', not a lock hash')
end
local queued = rcall('LLEN', queueKey)

-- @include shared/fence
-- @include grant-next

if queued > 0 then
  local failed = readFence()
  if failed then
    return failed
  end
end
if kind == 'hash' then
  rcall('DEL', lockKey)
end
if queued > 0 then
  grantNext()
end
if kind == 'hash' then
  return 1
end
return 0
