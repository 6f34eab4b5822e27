--[[
  Takes a free leadership for a new term: the lock's first acquisition (lock/acquire-2.lua) that
  also writes who leads and since when, and tells the observers.

  Input:
    KEYS[1] leader key: hash of the owner field -> 1, and the term: "candidate", "epoch", "since"
    KEYS[2] epoch key: string, the last epoch issued for this election (a fence key that never
            expires: an election is one small key for good, and its epochs never rely on the
            clock floor alone)
    KEYS[3] channel of the election's changes (declared as a key so sharded pub/sub can use it)
    ARGV[1] owner field: "<clientId>:<contextId>", new for every attempt
    ARGV[2] lease in milliseconds: the PEXPIRE of the leader key
    ARGV[3] candidate: who leads, as the caller names itself
    ARGV[4] publish command: "publish" or "spublish"

  Output: one value
    "<epoch>:<since>"  elected: the new epoch (a fencing token, max(last + 1, Redis TIME in
                microseconds), as a decimal string) and the term's start, Redis TIME in
                milliseconds. Also when the owner leads already: only an earlier run of this very
                call can have written its field (a resend), and its term is answered again
    -1          not elected: someone leads and the key has no expiry
    -2 - pttl   not elected: someone leads for pttl more milliseconds (<= -2)
    error       WRONGTYPE when either key holds another type, FENCEOVERFLOW when the epoch key is
                at 2^53 - 1 or above; nothing is written then

  Publishes "elected:<epoch>:<since>:<candidate>" when elected.
]]
local leaderKey, fenceKey, channel = KEYS[1], KEYS[2], KEYS[3]
local owner, leaseMs, candidate, publishCommand = ARGV[1], ARGV[2], ARGV[3], ARGV[4]
local rcall = redis.call
local time
-- The epoch key never expires (shared/fence: 0 is a counter without expiry).
local fenceTtlMs = 0

-- @include shared/fence

-- @include shared/look

-- A resend answers the term its first run began.
local taken = look(leaderKey, owner, 'leader', function()
  local term = rcall('HMGET', leaderKey, 'epoch', 'since')
  return term[1] .. ':' .. term[2]
end)
if taken then
  return taken
end
local epoch = nextToken()
local since = string.format('%d', tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000))
-- Publish before the term is written: a user who may not publish fails here with no term taken
-- (the epoch skipped is harmless). Nobody hears it before the script ends.
rcall(publishCommand, channel, 'elected:' .. epoch .. ':' .. since .. ':' .. candidate)
rcall('HSET', leaderKey, owner, 1, 'candidate', candidate, 'epoch', epoch, 'since', since)
rcall('PEXPIRE', leaderKey, leaseMs)
return epoch .. ':' .. since
