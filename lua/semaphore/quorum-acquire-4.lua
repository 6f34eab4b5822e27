--[[
  Takes slots of a Redlock semaphore on one master for a new lease: as many slots as it asks
  for, or none (never a part: a part would only make other attempts see a full semaphore), and
  proposes a fencing token. The client counts the lease when a majority of masters gave it the
  same slots (see src/semaphore/quorum.ts).

  Input:
    KEYS[1] slots hash: "limit" -> the limit, "<slot>" -> owner field of the lease holding that
            slot, "<owner>" -> "<permits>:<slot>,<slot>..." of that lease
    KEYS[2] leases key: zset of owner field -> lease end, Redis TIME in milliseconds
    KEYS[3] fence key: string, the largest fencing token this master issued or confirmed
    KEYS[4] release channel (declared as a key so sharded pub/sub can use it)
    ARGV[1] owner field: "<clientId>:<leaseId>", new for every attempt
    ARGV[2] permits: how many slots the lease takes, a whole number from 1 to the limit
    ARGV[3] the limit the caller's semaphore was made with: the slots are 0 .. limit - 1
    ARGV[4] lease in milliseconds
    ARGV[5] time to live of the fence key in milliseconds (at least the lease)
    ARGV[6] token floor: a decimal integer below 2^53 - 1 (the client's clock in
            microseconds, kept increasing by the client)
    ARGV[7] candidate slots, taken first when free: decimal numbers joined by ",", or ""
    ARGV[8] publish command: "publish" or "spublish"
    ARGV[9] message: "rl:<nonce>:<seq>", published with ":<n>" appended when leases that
            ended were pruned and n slots are left free after this attempt

  Output: an array
    {1, token, waitMs, holder_0, ..., holder_(limit-1)}
                  taken: the slots whose holder is the owner; token = max(last + 1, floor),
                  now the fence key's value; waitMs until the earliest other live lease
                  ends (-1: none)
    {0, '', waitMs, holder_0, ..., holder_(limit-1)}
                  not taken: fewer slots are free than asked for; waitMs until the earliest
                  live lease ends (-1: none); nothing is written but the pruning. holder_i
                  is the owner field holding slot i, '' when it is free
    {-1, "limit"} not taken: live leases hold the semaphore under another limit, the one
                  returned; nothing is written but the pruning
    error         WRONGTYPE when a key holds another type, or the fence key a string that
                  is not a whole number; FENCEOVERFLOW when the fence is at 2^53 - 1 or
                  above; nothing is written then

  An owner that holds slots here already (the attempt was resent after a reconnect) gives
  them back first. Both keys live until the latest lease end plus SLACK_MS.
]]
local slotsKey, leasesKey, fenceKey, channel = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local owner, permitsArg, limitArg, leaseMs, fenceTtlMs, floor = ARGV[1], ARGV[2], ARGV[3], ARGV[4], ARGV[5], ARGV[6]
local candidates, publishCommand, message = ARGV[7], ARGV[8], ARGV[9]
local rcall = redis.call
local permits, limit = tonumber(permitsArg), tonumber(limitArg)

-- @include quorum-slots
-- readFence() only: the token here is max(fence + 1, the client's floor), as lock/quorum-acquire-2.lua's.
-- @include shared/fence

-- Every check before any write: a key of another type fails here, with nothing changed.
local stored = tonumber(rcall('HGET', slotsKey, 'limit'))
rcall('ZCARD', leasesKey)
local failed = readFence()
if failed then
  return failed
end

local pruned = prune()
free(owner)
if stored and stored ~= limit and rcall('ZCARD', leasesKey) > 0 then
  return {-1, string.format('%d', stored)}
end

local first = rcall('ZRANGE', leasesKey, 0, 0, 'WITHSCORES')
local waitMs = -1
if first[2] then
  waitMs = tonumber(first[2]) - nowMs
end
local slots = holders(limit, nil)
local freeSlots = 0
for _, holder in ipairs(slots) do
  if holder == '' then
    freeSlots = freeSlots + 1
  end
end

local reply
if freeSlots < permits then
  reply = {0, '', waitMs}
else
  local taken = {}
  local function take(slot)
    if #taken < permits and slot >= 0 and slot < limit and slots[slot + 1] == '' then
      slots[slot + 1] = owner
      taken[#taken + 1] = tostring(slot)
      rcall('HSET', slotsKey, tostring(slot), owner)
    end
  end
  for slot in string.gmatch(candidates, '%d+') do
    take(tonumber(slot))
  end
  for slot = 0, limit - 1 do
    take(slot)
  end
  freeSlots = freeSlots - permits
  rcall('HSET', slotsKey, owner, permitsArg .. ':' .. table.concat(taken, ','), 'limit', limitArg)
  local ends = nowMs + tonumber(leaseMs)
  rcall('ZADD', leasesKey, string.format('%d', ends), owner)
  -- The keys live until the latest lease end, plus the slack: that may be another lease's end.
  local latest = rcall('ZRANGE', leasesKey, -1, -1, 'WITHSCORES')
  local ttl = string.format('%d', math.max(ends, tonumber(latest[2])) - nowMs + SLACK_MS)
  rcall('PEXPIRE', slotsKey, ttl)
  rcall('PEXPIRE', leasesKey, ttl)
  -- Both below 2^53: exact as Lua numbers. The floor goes back as the string it came as.
  local token = floor
  if lastToken < tonumber(floor) then
    rcall('SET', fenceKey, floor, 'PX', fenceTtlMs)
  else
    token = rcall('INCR', fenceKey)
    rcall('PEXPIRE', fenceKey, fenceTtlMs)
  end
  reply = {1, token, waitMs}
end

-- Slots of ended leases that nobody takes now are someone else's: wake the waiters for them.
if pruned > 0 and freeSlots > 0 then
  rcall(publishCommand, channel, message .. ':' .. freeSlots)
end
for _, holder in ipairs(slots) do
  reply[#reply + 1] = holder
end
return reply
