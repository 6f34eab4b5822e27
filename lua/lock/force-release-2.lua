--[[
  Deletes a lock whoever holds it, and wakes its waiters.

  Input:
    KEYS[1] lock key: hash of owner field -> hold count
    KEYS[2] release channel (declared as a key so sharded pub/sub can use it)
    ARGV[1] publish command: "publish" or "spublish"
    ARGV[2] message to publish

  Output: an integer
    1  the lock existed and was deleted; the channel was published
    0  nothing was locked; nothing was published
    error  WRONGTYPE when the key holds something that is not a lock hash; it is left alone
]]
local lockKey, channel = KEYS[1], KEYS[2]
local publishCommand, message = ARGV[1], ARGV[2]
local rcall = redis.call

local kind = rcall('TYPE', lockKey)['ok']
if kind == 'none' then
  return 0
end
if kind ~= 'hash' then
  return redis.error_reply('WRONGTYPE the key holds a ' .. kind .. ', not a lock hash')
end
-- Publish first, as in release-2.lua: a failing PUBLISH (ACL) leaves the lock as it was.
rcall(publishCommand, channel, message)
rcall('DEL', lockKey)
return 1
