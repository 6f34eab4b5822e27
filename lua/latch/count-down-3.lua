--[[
  Counts a latch down by one; at 0 deletes it and publishes on its channel, waking every waiter.
  A count-down carries an id of its own: a call the client sent twice (ioredis resends a command
  whose connection closed before its reply came) counts once.

  Input:
    KEYS[1] latch key: string, the count (absent: the latch is open, count 0)
    KEYS[2] count-downs key: set of the ids of the count-downs applied since the count was set
    KEYS[3] channel (declared as a key so sharded pub/sub can use it)
    ARGV[1] this count-down's id (new for every call)
    ARGV[2] publish command: "publish" or "spublish"
    ARGV[3] message to publish

  Output: the count after this call, in decimal digits (a string: an integer reply is read
  through a float by some clients, which rounds counts near 2^53), or the integer 0
    "n"    n>=1 left (a call whose id was applied already changes nothing and answers the
           count now)
    0      the latch is open: it was deleted and the channel published, or it was not set
    error  WRONGTYPE when the latch key holds something that is not a count; nothing is written
]]
local latchKey, doneKey, channel = KEYS[1], KEYS[2], KEYS[3]
local id, publishCommand, message = ARGV[1], ARGV[2], ARGV[3]
local rcall = redis.call

local kind = rcall('TYPE', latchKey)['ok']
if kind == 'none' then
  return 0
end
local raw = kind == 'string' and rcall('GET', latchKey)
if not raw or not string.match(raw, '^%d+$') then
  return redis.error_reply('WRONGTYPE the latch key holds a value that is not a latch count')
end
if rcall('SISMEMBER', doneKey, id) == 1 then
  return raw
end
local left = tonumber(raw) - 1
if left > 0 then
  rcall('DECR', latchKey)
  rcall('SADD', doneKey, id)
  -- The record of count-downs lives as long as the latch.
  local pttl = rcall('PTTL', latchKey)
  if pttl > 0 then
    rcall('PEXPIRE', doneKey, pttl)
  end
  return string.format('%d', left)
end
-- Publish first: Redis checks ACLs per command and does not roll a script back, so a user who may
-- not publish fails here with nothing changed. Nobody hears it before the script ends.
rcall(publishCommand, channel, message)
rcall('DEL', latchKey, doneKey)
return 0
