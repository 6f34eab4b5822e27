--[[
  Sets a count-down latch's count, unless it is set already.

  Input:
    KEYS[1] latch key: string, the count (absent: the latch is open, count 0)
    KEYS[2] count-downs key: set of the ids of the count-downs applied since the count was set
    ARGV[1] the count, a whole number >= 1
    ARGV[2] time to live in milliseconds of both keys, "0" for none

  Output: an integer
    1      set: the count is ARGV[1] now
    0      already set (its count is above 0): nothing changes
    error  WRONGTYPE when the latch key holds something that is not a count; nothing is written
]]
local latchKey, doneKey = KEYS[1], KEYS[2]
local count, ttlMs = ARGV[1], tonumber(ARGV[2])
local rcall = redis.call

local kind = rcall('TYPE', latchKey)['ok']
if kind ~= 'none' then
  if kind ~= 'string' or not string.match(rcall('GET', latchKey), '^%d+$') then
    return redis.error_reply('WRONGTYPE the latch key holds a value that is not a latch count')
  end
  return 0
end
-- Left by a latch that expired with count-downs recorded: they belong to the latch that is gone.
rcall('DEL', doneKey)
if ttlMs > 0 then
  rcall('SET', latchKey, count, 'PX', ttlMs)
else
  rcall('SET', latchKey, count)
end
return 1
