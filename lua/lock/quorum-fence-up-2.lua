--[[
  Raises one Redlock master's fence to the token the quorum chose, only while the owner still
  holds the lock there (the proof in docs/guarantees.md needs the write made during the hold).

  Input:
    KEYS[1] lock key: hash of owner field -> hold count
    KEYS[2] fence key: string, the largest fencing token this master issued or confirmed
    ARGV[1] owner field: "<clientId>:<contextId>"
    ARGV[2] token: a decimal integer below 2^53
    ARGV[3] time to live of the fence key in milliseconds (at least the lease)

  Output: an integer
    1      the owner holds the lock here and the fence is now at least the token
    0      the owner holds nothing here (expired, force-unlocked): nothing is written
    error  WRONGTYPE when the fence key holds a string that is not a whole number
]]
local lockKey, fenceKey = KEYS[1], KEYS[2]
local owner, token, fenceTtlMs = ARGV[1], ARGV[2], ARGV[3]
local rcall = redis.call

-- @include shared/fence-up

if rcall('HEXISTS', lockKey, owner) == 0 then
  return 0
end
return raiseFence() or 1
