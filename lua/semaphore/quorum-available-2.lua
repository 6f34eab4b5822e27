--[[
  Lists the holders of the slots of a Redlock semaphore on one master. Writes nothing.

  Input:
    KEYS[1] slots hash: "limit", "<slot>" -> owner field, "<owner>" -> "<permits>:<slots>"
    KEYS[2] leases key: zset of owner field -> lease end, Redis TIME in milliseconds
    ARGV[1] the limit the caller's semaphore was made with: the slots are 0 .. limit - 1

  Output: an array
    {1, holder_0, ..., holder_(limit-1)}   holder_i: the owner field of the live lease holding
                  slot i, '' when it is free (a lease past its end counts as free, pruned or
                  not); the client counts the slots held on a majority of masters
    {-1, "limit"} live leases hold the semaphore under another limit, the one returned
]]
local slotsKey, leasesKey, limitArg = KEYS[1], KEYS[2], ARGV[1]
local rcall = redis.call
local limit = tonumber(limitArg)

-- @include quorum-slots

local stored = tonumber(rcall('HGET', slotsKey, 'limit'))
local live = {}
local any = false
for _, owner in ipairs(rcall('ZRANGEBYSCORE', leasesKey, '(' .. nowMs, '+inf')) do
  live[owner] = true
  any = true
end
if any and stored and stored ~= limit then
  return {-1, string.format('%d', stored)}
end
local reply = {1}
for _, holder in ipairs(holders(limit, live)) do
  reply[#reply + 1] = holder
end
return reply
