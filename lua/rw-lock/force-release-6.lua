--[[
  Removes every hold of one side (read or write), whoever has them, and wakes whom that frees:
  the write side as a write release does (every waiting reader, the writers, a read batch), the
  read side the writers.

  Input:
    KEYS[1] rw hash: `writer` -> write owner; `r:<owner>` / `w:<owner>` -> hold count
    KEYS[2] leases zset: `r:<owner>` / `w:<owner>` -> lease end, Redis TIME in ms
    KEYS[3] waiting readers zset: waiting reader's wait id -> Redis TIME (ms) it ends
    KEYS[4] batch zset: the readers a write release admitted (PX = the batch)
    KEYS[5] readers' channel (declared as a key so sharded pub/sub can use it)
    KEYS[6] writers' channel
    ARGV[1] side: "r" or "w"
    ARGV[2] publish command: "publish" or "spublish"
    ARGV[3] read batch in milliseconds (as in release-7.lua)
    ARGV[4] optional: the message to publish (a Redlock client's unique one); "" or absent: "force"

  Output: an integer
    1  that side had live holds; they were removed and the channels published
    0  that side had none; nothing was published
    error  WRONGTYPE when a key holds another type; nothing is written then
]]
local hashKey, leasesKey, waitingKey, batchKey, readersChannel, writersChannel = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6]
local side, publishCommand, batchMs = ARGV[1], ARGV[2], ARGV[3]
local message = (ARGV[4] or '') ~= '' and ARGV[4] or 'force'
local rcall = redis.call

-- @include state

rcall('HGET', hashKey, 'writer')
local live = rcall('ZRANGEBYSCORE', leasesKey, '(' .. nowMs, '+inf')
local mine = {}
for _, member in ipairs(live) do
  if string.sub(member, 1, 2) == side .. ':' then
    mine[#mine + 1] = member
  end
end
if #mine == 0 then
  return 0
end

-- Publish first, as in release-7.lua: a failing PUBLISH (ACL) leaves the holds as they were.
if side == 'w' then
  rcall(publishCommand, readersChannel, message)
end
rcall(publishCommand, writersChannel, message)
for _, member in ipairs(mine) do
  rcall('HDEL', hashKey, member)
  rcall('ZREM', leasesKey, member)
end
if side == 'w' then
  rcall('HDEL', hashKey, 'writer')
  rcall('ZREMRANGEBYSCORE', waitingKey, '-inf', nowMs)
  if rcall('EXISTS', waitingKey) == 1 then
    rcall('RENAME', waitingKey, batchKey)
    rcall('PEXPIRE', batchKey, batchMs)
  end
end
prune()
settle()
return 1
