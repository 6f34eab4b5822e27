--[[
  Releases one hold of an owner, or all of them; on the last one grants the lock to the head of the
  queue (direct hand-off: the grantee needs no attempt of its own).

  Input:
    KEYS[1] lock key: hash of owner field -> hold count (a grant's claim, then its lease)
    KEYS[2] queue key: list of waiting owner fields, oldest first
    KEYS[3] deadlines key: zset of waiting owner field -> Redis TIME in milliseconds by which
            its client must heartbeat again
    KEYS[4] fence key: string, the last fencing token issued for this lock
    ARGV[1] publish command: "publish" or "spublish"
    ARGV[2] grant channel prefix: a grant is published on this + the grantee's client id
    ARGV[3] claim in milliseconds: the lease of a granted lock until its waiter confirms it
    ARGV[4] time to live of the fence key in milliseconds
    ARGV[5] owner field: "<clientId>:<contextId>"
    ARGV[6] the hold count the caller believes it has before this release (>= 1)
    ARGV[7] "1": release the owner's whole hold whatever its count (the outermost lease);
            "0": one level

  Output: an array
    {-1}                           the owner holds nothing here (expired, force-unlocked, or
                                   never held); nothing is written
    {n}                            n >= 1: the owner's hold count after this call. When the
                                   count is already below what the caller believes (one
                                   level), this is a retry of a release that went through:
                                   nothing changes
    {0}                            released; the queue had nobody the grant could reach
    {0, grantee, token, nowMs}     released and granted to the owner field grantee with the
                                   fencing token (a decimal string) at Redis TIME nowMs (ms)
    error                          WRONGTYPE when a key holds another type
]]
local lockKey, queueKey, deadlinesKey, fenceKey = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local publishCommand, grantPrefix, claimMs, fenceTtlMs = ARGV[1], ARGV[2], ARGV[3], ARGV[4]
local owner, believed, whole = ARGV[5], tonumber(ARGV[6]), ARGV[7]
local rcall = redis.call

local count = rcall('HGET', lockKey, owner)
if not count then
  return {-1}
end
count = tonumber(count)
if whole ~= '1' then
  if count < believed then
    return {count}
  end
  if count > 1 then
    return {rcall('HINCRBY', lockKey, owner, -1)}
  end
end

local queued = rcall('LLEN', queueKey)

local time, nowMs, lastToken

-- Redis TIME in milliseconds, read once per call, when first needed.
local function now()
  if not time then
    time = rcall('TIME')
    nowMs = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
  end
  return nowMs
end

-- Reads and checks the fence; called before anything is written, by every path that may grant
-- (a script that fails half-way is not rolled back). Only digits pass (tonumber would take "9e15").
local function readFence()
  local raw = rcall('GET', fenceKey) or '0'
  if not string.match(raw, '^%d+$') then
    return redis.error_reply('WRONGTYPE the fence key holds a string that is not a whole number')
  end
  lastToken = tonumber(raw)
  return nil
end

-- The next fencing token: max(last + 1, Redis TIME in microseconds), as a decimal string (a Lua
-- number turned into a string would round tokens above 10^14). Needs readFence() and now() first.
local function nextToken()
  if lastToken < tonumber(time[1]) * 1000000 + tonumber(time[2]) then
    return time[1] .. string.format('%06d', tonumber(time[2]))
  end
  return string.format('%d', lastToken + 1)
end

-- Grants the free lock to the head of the queue with the short claim lease, and tells only the
-- grantee's client, on its own channel. An entry past its deadline (its client stopped heartbeating)
-- is dropped; so is one whose client no longer listens: PUBLISH reached nobody (process gone, or its
-- subscriber reconnecting: that client re-joins by heartbeat). At most 64 entries per call. Needs
-- readFence() first.
local function grantNext()
  now()
  for _ = 1, 64 do
    local head = rcall('LPOP', queueKey)
    if not head then
      break
    end
    local deadline = tonumber(rcall('ZSCORE', deadlinesKey, head))
    rcall('ZREM', deadlinesKey, head)
    if deadline and deadline >= nowMs then
      local token = nextToken()
      local message = head .. '|' .. token .. '|' .. string.format('%d', nowMs) .. '|' .. claimMs
      if rcall(publishCommand, grantPrefix .. string.match(head, '^[^:]*'), message) > 0 then
        rcall('HSET', lockKey, head, 1)
        rcall('PEXPIRE', lockKey, claimMs)
        rcall('SET', fenceKey, token, 'PX', fenceTtlMs)
        return {head, token}
      end
    end
  end
  return nil
end

if queued > 0 then
  local failed = readFence()
  if failed then
    return failed
  end
end
rcall('DEL', lockKey)
if queued > 0 then
  local granted = grantNext()
  if granted then
    return {0, granted[1], granted[2], nowMs}
  end
end
return {0}
