--[[
  Force-unlocks one side of an RReadWriteLock (the Redisson layout), as Redisson's forceUnlock of
  a read or write lock does: deletes the hash when it is in that side's mode, and publishes (0 for
  the read side, 1 for the write side).

  Input:
    KEYS[1] the lock hash <name>
    KEYS[2] channel redisson_rwlock:{<name>} (declared as a key so sharded pub/sub can use it)
    ARGV[1] side: "r" or "w"
    ARGV[2] publish command: "publish" or "spublish"

  Output: an integer
    1  deleted and published
    0  the lock was not in that mode: nothing written
]]
local hashKey, channel = KEYS[1], KEYS[2]
local side, publishCommand = ARGV[1], ARGV[2]
local rcall = redis.call

local mode = side == 'r' and 'read' or 'write'
if rcall('HGET', hashKey, 'mode') ~= mode then
  return 0
end
rcall('DEL', hashKey)
rcall(publishCommand, channel, side == 'r' and '0' or '1')
return 1
