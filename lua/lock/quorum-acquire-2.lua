--[[
  Takes a free lock on one Redlock master for a new owner, and proposes a fencing token: the
  first acquisition of a hold on this master (re-entry is lock/reenter-2.lua, run per master).
  The quorum takes the largest token of the masters that took it (see src/lock/quorum.ts).

  Input:
    KEYS[1] lock key: hash of owner field -> hold count
    KEYS[2] fence key: string, the largest fencing token this master issued or confirmed
    ARGV[1] owner field: "<clientId>:<contextId>", new for every attempt
    ARGV[2] lease in milliseconds: the PEXPIRE of the lock key
    ARGV[3] time to live of the fence key in milliseconds (at least the lease)
    ARGV[4] token floor: a decimal integer below 2^53 - 1 (the client's clock in
            microseconds, kept increasing by the client)
    ARGV[5] "1": name the holder when held; "0": do not (a waiter asking one master
            first only needs to know that it is held)

  Output: one value (no array: the cheapest reply to parse)
    token       acquired; token = max(last + 1, floor), now the fence key's value, as a
                decimal string: the floor as given, or the INCR of the fence key
    {-1, holder}         not acquired: someone holds it and the key has no expiry
    {-2 - pttl, holder}  not acquired: someone holds it for pttl more milliseconds;
                holder is an owner field of the lock hash ('' for a foreign value, or
                when ARGV[5] is "0"), so the client can tell a holder of a majority
                from a split between owners
    error       WRONGTYPE when either key holds another type (as lock/acquire-2.lua),
                or the fence key a string that is not a whole number; FENCEOVERFLOW
                when the fence is at 2^53 - 1 or above; nothing is written then
]]
local lockKey, fenceKey = KEYS[1], KEYS[2]
local owner, leaseMs, fenceTtlMs, floor, nameHolder = ARGV[1], ARGV[2], ARGV[3], ARGV[4], ARGV[5]
local rcall = redis.call

-- readFence() only: the token here is max(fence + 1, the client's floor), not nextToken()'s TIME.
-- @include shared/fence

-- PTTL answers both questions: is it locked (-2: no), and for how long.
local pttl = rcall('PTTL', lockKey)
if pttl ~= -2 then
  if pttl == -1 and rcall('TYPE', lockKey)['ok'] ~= 'hash' then
    return redis.error_reply('WRONGTYPE the lock key holds a value that is not a lock hash')
  end
  local holder = ''
  if nameHolder == '1' then
    local fields = redis.pcall('HKEYS', lockKey)
    holder = (type(fields) == 'table' and fields[1]) or ''
  end
  if pttl == -1 then
    return { -1, holder }
  end
  return { -2 - pttl, holder }
end

local failed = readFence()
if failed then
  return failed
end

rcall('HSET', lockKey, owner, 1)
rcall('PEXPIRE', lockKey, leaseMs)
-- Both below 2^53: exact as Lua numbers. The floor goes back as the string it came as.
if lastToken < tonumber(floor) then
  rcall('SET', fenceKey, floor, 'PX', fenceTtlMs)
  return floor
end
-- A decimal string: an integer reply near 2^53 is rounded by the client's parser.
local token = string.format('%d', rcall('INCR', fenceKey))
rcall('PEXPIRE', fenceKey, fenceTtlMs)
return token
