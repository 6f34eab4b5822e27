--[[
  Takes a wait that ended without the lock (timeout, abort, close) out of the lock's bookkeeping:
  a writer's intent, a reader's place among the waiting or in the read batch. Wakes readers when
  the last intent went, and writers when the read batch ended with it.

  Input:
    KEYS[1] intents zset: waiting writer's wait id -> Redis TIME (ms) its intent ends
    KEYS[2] waiting readers zset: waiting reader's wait id -> Redis TIME (ms) it ends
    KEYS[3] batch zset: the readers a write release admitted (PX = the batch)
    KEYS[4] readers' channel (declared as a key so sharded pub/sub can use it)
    KEYS[5] writers' channel
    ARGV[1] wait id
    ARGV[2] publish command: "publish" or "spublish", or "" to publish nothing (a Redlock
            client publishes on a majority of its masters only)
    ARGV[3] optional: the message to publish (a Redlock client's unique one); "" or absent: "leave"

  Output: an integer, how many channels were published (0 to 2; 0 when ARGV[2] is "")
]]
local intentsKey, waitingKey, batchKey, readersChannel, writersChannel = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5]
local waitId, publishCommand, message = ARGV[1], ARGV[2], ARGV[3] or ''
local rcall = redis.call

local published = 0
local function publish(channel)
  if publishCommand ~= '' then
    rcall(publishCommand, channel, message ~= '' and message or 'leave')
    published = published + 1
  end
end
if rcall('ZSCORE', intentsKey, waitId) and rcall('ZCARD', intentsKey) == 1 then
  publish(readersChannel)
end
if rcall('ZSCORE', batchKey, waitId) and rcall('ZCARD', batchKey) == 1 then
  publish(writersChannel)
end
rcall('ZREM', intentsKey, waitId)
rcall('ZREM', waitingKey, waitId)
rcall('ZREM', batchKey, waitId)
return published
