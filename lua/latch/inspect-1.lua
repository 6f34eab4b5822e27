--[[
  Reads a latch's count and how long it lives. Writes nothing.

  Input:
    KEYS[1] latch key: string, the count (absent: the latch is open, count 0)

  Output: an array
    {"count", pttl}  count in decimal digits (a string: some clients read integer replies
                   through a float, which rounds counts near 2^53); pttl -1 when it has no
                   time to live
    {0, -2}        the latch is not set
    error          WRONGTYPE when the latch key holds something that is not a count
]]
local latchKey = KEYS[1]
local rcall = redis.call

local kind = rcall('TYPE', latchKey)['ok']
if kind == 'none' then
  return {0, -2}
end
local raw = kind == 'string' and rcall('GET', latchKey)
if not raw or not string.match(raw, '^%d+$') then
  return redis.error_reply('WRONGTYPE the latch key holds a value that is not a latch count')
end
return {raw, rcall('PTTL', latchKey)}
