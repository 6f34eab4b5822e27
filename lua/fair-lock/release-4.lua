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
    ARGV[4] time to live of the fence key in milliseconds (at least the claim, for a grant)
    ARGV[5] owner field: "<clientId>:<contextId>"
    ARGV[6] the hold count the caller believes it has before this release (>= 1)
    ARGV[7] "1": release the owner's whole hold whatever its count (the outermost lease);
            "0": one level
    ARGV[8] the owner's fencing token: while it holds the lock, the last token issued (the
            next one is max(this + 1, Redis TIME in microseconds), the fence key not read)

  Output: an array
    {-1}                           the owner holds nothing here (expired, force-unlocked, or
                                   never held); nothing is written
    {n}                            n >= 1: the owner's hold count after this call. When the
                                   count is already below what the caller believes (one
                                   level), this is a retry of a release that went through:
                                   nothing changes
    {0}                            released; the queue had nobody the grant could reach (or
                                   the next token would leave the safe integers: FENCEOVERFLOW
                                   is left to the next acquire to report)
    {0, grantee, token, nowMs}     released and granted to the owner field grantee with the
                                   fencing token (a decimal string) at Redis TIME nowMs (ms)
    error                          WRONGTYPE when a key holds another type
]]
local lockKey, queueKey, deadlinesKey, fenceKey = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local publishCommand, grantPrefix, claimMs, fenceTtlMs = ARGV[1], ARGV[2], ARGV[3], ARGV[4]
local owner, believed, whole, holderToken = ARGV[5], tonumber(ARGV[6]), ARGV[7], ARGV[8]
local rcall = redis.call
local time, nowMs

-- @include shared/release-level

local count = rcall('HGET', lockKey, owner)
if not count then
  return {-1}
end
local left = releaseLevel(lockKey, owner, tonumber(count), believed, whole)
if left then
  return {left}
end

local queued = rcall('LLEN', queueKey)

-- @include shared/fence
-- @include grant-next

rcall('DEL', lockKey)
-- The owner holds the lock: nobody was issued a token since its own, so the fence is not read.
if queued > 0 and takeFence(holderToken) == nil then
  local granted = grantNext()
  if granted then
    return {0, granted[1], granted[2], nowMs}
  end
end
return {0}
