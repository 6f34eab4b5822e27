--[[
  Releases a hold of an RReadWriteLock (the Redisson layout), one level or all of them, by
  Redisson's rules: a read release keeps the hash while some reader's timeout key lives (or a
  writer holds it), else deletes it and publishes 0; the last write level deletes the hash and
  publishes 1, or turns it to read mode when the writer's context reads too (then 1 is published
  as well: waiting readers may come in; Redisson itself stays silent there).

  Input:
    KEYS[1] the lock hash <name>
    KEYS[2] the base of the timeout keys: {<name>} (or <name> when it has a brace)
    KEYS[3] channel redisson_rwlock:{<name>} (declared as a key so sharded pub/sub can use it)
    ARGV[1] member: "r:<owner>" or "w:<owner>"
    ARGV[2] the hold count the caller believes it has before this release (>= 1)
    ARGV[3] "1": release the whole hold whatever its count; "0": one level
    ARGV[4] publish command: "publish" or "spublish"

  Output: an integer
    -1   the owner holds nothing here (expired, force-unlocked, or never held)
    n>=0 the owner's hold count after this call. Below what the caller believes (one level):
         a retry of a release that went through, nothing changes
]]
local hashKey, base, channel = KEYS[1], KEYS[2], KEYS[3]
local member, believed, whole, publishCommand = ARGV[1], tonumber(ARGV[2]), ARGV[3], ARGV[4]
local rcall = redis.call
local read, owner = string.sub(member, 1, 1) == 'r', string.sub(member, 3)
local field = read and owner or owner .. ':write'

local count = tonumber(rcall('HGET', hashKey, field))
if not count then
  return -1
end
if whole ~= '1' and count < believed then
  return count
end
local left = 0
if whole ~= '1' then
  left = count - 1
end
if left > 0 then
  rcall('HSET', hashKey, field, left)
else
  rcall('HDEL', hashKey, field)
end

if not read then
  if left > 0 then
    return left
  end
  if rcall('HLEN', hashKey) > 1 then
    rcall('HSET', hashKey, 'mode', 'read')
  else
    rcall('DEL', hashKey)
  end
  rcall(publishCommand, channel, '1')
  return 0
end

for n = count, left + 1, -1 do
  rcall('DEL', base .. ':' .. owner .. ':rwlock_timeout:' .. n)
end
local mode = rcall('HGET', hashKey, 'mode')
if rcall('HLEN', hashKey) > 1 then
  local longest = -3
  for _, name in ipairs(rcall('HKEYS', hashKey)) do
    local levels = tonumber(rcall('HGET', hashKey, name))
    if levels then
      for n = levels, 1, -1 do
        longest = math.max(longest, rcall('PTTL', base .. ':' .. name .. ':rwlock_timeout:' .. n))
      end
    end
  end
  if longest > 0 or mode == 'write' then
    if longest > 0 and mode ~= 'write' then
      rcall('PEXPIRE', hashKey, longest)
    end
    return left
  end
end
rcall('DEL', hashKey)
rcall(publishCommand, channel, '0')
return left
