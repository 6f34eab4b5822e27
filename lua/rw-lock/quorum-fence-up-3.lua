--[[
  Raises one Redlock master's read-write lock fence to the token the quorum chose, only while the
  hold (read or write) is still live there (the proof in docs/guarantees.md needs the write made
  during the hold): lua/lock/quorum-fence-up-2.lua for the read-write layout.

  Input:
    KEYS[1] rw hash: `writer` -> write owner; `r:<owner>` / `w:<owner>` -> hold count
    KEYS[2] leases zset: `r:<owner>` / `w:<owner>` -> lease end, Redis TIME in ms
    KEYS[3] fence key: string, the largest fencing token this master issued or confirmed
    ARGV[1] the hold's member: "r:<owner>" or "w:<owner>"
    ARGV[2] token: a decimal integer below 2^53
    ARGV[3] time to live of the fence key in milliseconds (at least the lease)

  Output: an integer
    1      the hold is live here and the fence is now at least the token
    0      the hold is not live here (its lease ended, force-unlocked, released): nothing is written
    error  WRONGTYPE when the fence key holds a string that is not a whole number
]]
local hashKey, leasesKey, fenceKey = KEYS[1], KEYS[2], KEYS[3]
local member, token, fenceTtlMs = ARGV[1], ARGV[2], ARGV[3]
local rcall = redis.call

-- @include shared/fence-up

-- @include shared/now
local endsAt = rcall('ZSCORE', leasesKey, member)
if not endsAt or tonumber(endsAt) <= nowMs or rcall('HEXISTS', hashKey, member) == 0 then
  return 0
end
return raiseFence() or 1
