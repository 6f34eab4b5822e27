--[[
  Reads one side (read or write) of a read-write lock without changing it: whether it has a live
  hold, the time left on its latest lease, and one owner's hold count. A hold whose lease ended
  counts as gone even before a script pruned it.

  Input:
    KEYS[1] rw hash: `writer` -> write owner; `r:<owner>` / `w:<owner>` -> hold count
    KEYS[2] leases zset: `r:<owner>` / `w:<owner>` -> lease end, Redis TIME in ms
    ARGV[1] side: "r" or "w"
    ARGV[2] a member ("r:<owner>" or "w:<owner>") whose count to read, or ""

  Output: an array {locked, ttlMs, count}
    locked  1 when the side has a live hold, else 0
    ttlMs   milliseconds left on the side's latest lease; -2 when it has no live hold
    count   the member's hold count, 0 when it has no live hold
]]
local hashKey, leasesKey = KEYS[1], KEYS[2]
local side, member = ARGV[1], ARGV[2]
local rcall = redis.call
-- @include shared/now

local ttlMs = -2
if side == 'w' then
  local writer = rcall('HGET', hashKey, 'writer')
  local endsAt = writer and rcall('ZSCORE', leasesKey, 'w:' .. writer)
  if endsAt and tonumber(endsAt) > nowMs then
    ttlMs = tonumber(endsAt) - nowMs
  end
else
  -- At most one member is the writer's: of the two latest live ones, one is a reader's if any is.
  local top = rcall('ZREVRANGEBYSCORE', leasesKey, '+inf', '(' .. nowMs, 'WITHSCORES', 'LIMIT', 0, 2)
  for i = 1, #top, 2 do
    if ttlMs == -2 and string.sub(top[i], 1, 2) == 'r:' then
      ttlMs = tonumber(top[i + 1]) - nowMs
    end
  end
end
local count = 0
if member ~= '' then
  local endsAt = rcall('ZSCORE', leasesKey, member)
  if endsAt and tonumber(endsAt) > nowMs then
    count = tonumber(rcall('HGET', hashKey, member) or '0')
  end
end
return { ttlMs >= 0 and 1 or 0, ttlMs, count }
