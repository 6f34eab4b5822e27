--[[
  Releases one level of a hold (read or write side), or all of it. When a write hold ends it
  wakes every waiting reader with one message, opens a read batch for the readers that were
  waiting, and wakes the writers with another message unless readers were waiting while an
  intent keeps new readers out; when the last read hold ends it wakes a writer.

  Input:
    KEYS[1] rw hash: `writer` -> write owner; `r:<owner>` / `w:<owner>` -> hold count
    KEYS[2] leases zset: `r:<owner>` / `w:<owner>` -> lease end, Redis TIME in ms
    KEYS[3] waiting readers zset: waiting reader's wait id -> Redis TIME (ms) it ends
    KEYS[4] batch zset: the readers a write release admitted (PX = the batch)
    KEYS[5] readers' channel (declared as a key so sharded pub/sub can use it)
    KEYS[6] writers' channel
    KEYS[7] intents zset: waiting writer's wait id -> Redis TIME (ms) its intent ends
    ARGV[1] the hold's member: "r:<owner>" or "w:<owner>"
    ARGV[2] the hold count the caller believes it has before this release (>= 1)
    ARGV[3] "1": release the whole hold whatever its count (the outermost lease); "0": one level
    ARGV[4] publish command: "publish" or "spublish", or "" to publish nothing (a Redlock
            release publishes on a majority of its masters only)
    ARGV[5] read batch in milliseconds: how long the readers a write release admits keep
            waiting writers out at most
    ARGV[6] optional: the message to publish (a Redlock release's unique one); "" or absent:
            "write" for a write hold, "read" for a read hold

  Output: an integer
    -1   the owner holds nothing here (its lease ended, force-unlocked, or never held)
    n>=0 the hold count after this call; 0 means the hold ended (and the channels were
         published as above). When the count is already below what the caller believes (one
         level), this is a retry of a release that went through: nothing changes.
]]
local hashKey, leasesKey, waitingKey, batchKey, readersChannel, writersChannel, intentsKey = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6], KEYS[7]
local member, believed, whole, publishCommand, batchMs, message = ARGV[1], tonumber(ARGV[2]), ARGV[3], ARGV[4], ARGV[5], ARGV[6] or ''
local rcall = redis.call

-- @include shared/release-level

local function publish(channel, default)
  if publishCommand ~= '' then
    rcall(publishCommand, channel, message ~= '' and message or default)
  end
end

-- @include state

local count = rcall('HGET', hashKey, member)
local endsAt = rcall('ZSCORE', leasesKey, member)
if not count or not endsAt or tonumber(endsAt) <= nowMs then
  prune()
  settle()
  return -1
end
count = tonumber(count)
local left = releaseLevel(hashKey, member, count, believed, whole)
if left then
  return left
end

-- Publish first: Redis checks ACLs per command and does not roll a script back, so a user who
-- may not publish fails here with nothing changed. Nobody hears it before the script ends.
if string.sub(member, 1, 2) == 'w:' then
  -- The readers waiting now get in before any writer: they become the batch, which ends when
  -- the last of them got in, or after ARGV[5] ms. While a writer's intent keeps new readers out
  -- meanwhile, the writers need not wake: the last reader to leave wakes them.
  local waiting = #rcall('ZRANGEBYSCORE', waitingKey, '(' .. nowMs, '+inf', 'LIMIT', 0, 1) > 0
  local intended = #rcall('ZRANGEBYSCORE', intentsKey, '(' .. nowMs, '+inf', 'LIMIT', 0, 1) > 0
  publish(readersChannel, 'write')
  if not (waiting and intended) then
    publish(writersChannel, 'write')
  end
  rcall('HDEL', hashKey, 'writer', member)
  rcall('ZREM', leasesKey, member)
  if waiting then
    rcall('ZREMRANGEBYSCORE', waitingKey, '-inf', nowMs)
    rcall('RENAME', waitingKey, batchKey)
    rcall('PEXPIRE', batchKey, batchMs)
  end
else
  prune()
  local left = readers() - 1
  if left == 0 then
    publish(writersChannel, 'read')
  end
  rcall('HDEL', hashKey, member)
  rcall('ZREM', leasesKey, member)
end
prune()
settle()
return 0
