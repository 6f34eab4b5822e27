--[[
  Raises one Redlock master's semaphore fence to the token the quorum chose, only while the lease
  still holds its slots here (the proof in docs/guarantees.md needs the write made during the hold):
  lua/lock/quorum-fence-up-2.lua for the semaphore's slots.

  Input:
    KEYS[1] slots hash: "limit" -> the limit, "<slot>" -> owner field, "<owner>" -> "<permits>:<slots>"
    KEYS[2] leases key: zset of owner field -> lease end, Redis TIME in milliseconds
    KEYS[3] fence key: string, the largest fencing token this master issued or confirmed
    ARGV[1] owner field: "<clientId>:<leaseId>"
    ARGV[2] token: a decimal integer below 2^53
    ARGV[3] time to live of the fence key in milliseconds (at least the lease)

  Output: an integer
    1      the lease holds its slots here and the fence is now at least the token
    0      the lease holds nothing here (it ended, was force-released or given back): nothing is written
    error  WRONGTYPE when a key holds another type, or the fence key a string that is not a whole number
]]
local slotsKey, leasesKey, fenceKey = KEYS[1], KEYS[2], KEYS[3]
local owner, token, fenceTtlMs = ARGV[1], ARGV[2], ARGV[3]
local rcall = redis.call

-- @include quorum-slots
-- @include shared/fence-up

local endsAt = rcall('ZSCORE', leasesKey, owner)
if not endsAt or tonumber(endsAt) <= nowMs or not leaseOf(owner) then
  return 0
end
return raiseFence() or 1
