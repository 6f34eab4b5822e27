--[[
  Reads one side of an RReadWriteLock (the Redisson layout). Writes nothing.

  Input:
    KEYS[1] the lock hash <name>
    ARGV[1] side: "r" or "w"
    ARGV[2] an owner's field to count ("<owner>" or "<owner>:write"), or ""

  Output: {locked, ttlMs, count}
    locked  1 when the side is locked as Redisson's isLocked says: read mode, or write mode
            with a read hold beside the writer's (read side); write mode (write side)
    ttlMs   the hash's PTTL (-1 no expiry, -2 absent)
    count   the field's hold count, 0 without one
]]
local hashKey = KEYS[1]
local side, field = ARGV[1], ARGV[2]
local rcall = redis.call

local mode = rcall('HGET', hashKey, 'mode')
local locked = 0
if mode == 'write' and (side == 'w' or rcall('HLEN', hashKey) > 2) then
  locked = 1
elseif mode == 'read' and side == 'r' then
  locked = 1
end
local count = 0
if field ~= '' then
  count = tonumber(rcall('HGET', hashKey, field) or '0')
end
return {locked, rcall('PTTL', hashKey), count}
