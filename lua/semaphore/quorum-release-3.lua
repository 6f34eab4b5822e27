--[[
  Gives back a lease of a Redlock semaphore on one master: its slots and its entry. Run by a
  release (publishing), by a failed attempt (without publishing, unless other attempts may have
  seen its slots held), and after a successful one on the masters that took other slots than the
  majority agreed on.

  Input:
    KEYS[1] slots hash: "limit", "<slot>" -> owner field, "<owner>" -> "<permits>:<slots>"
    KEYS[2] leases key: zset of owner field -> lease end, Redis TIME in milliseconds
    KEYS[3] release channel (declared as a key so sharded pub/sub can use it)
    ARGV[1] owner field: "<clientId>:<leaseId>"
    ARGV[2] publish command: "publish" or "spublish", or "" to publish nothing
    ARGV[3] message: "rl:<nonce>:<seq>", published as "rl:<nonce>:<seq>:<permits>" (the
            lease's permits, the same on every master, so that subscribers count the copies
            of one release)

  Output: an integer
    -1    the owner holds no live lease here (it ended, or was never taken): nothing is
          written but the pruning of ended leases
    n>=1  the owner's lease was live: its n slots came free (and the message was published
          when a publish command was given)

  Leases that ended are pruned; when no lease is left, both keys are deleted.
]]
local slotsKey, leasesKey, channel = KEYS[1], KEYS[2], KEYS[3]
local owner, publishCommand, message = ARGV[1], ARGV[2], ARGV[3]
local rcall = redis.call

-- @include quorum-slots

-- A lease past its end is gone, pruned or not.
local ends = tonumber(rcall('ZSCORE', leasesKey, owner))
local permits = nil
if ends and ends > nowMs then
  permits = leaseOf(owner)
end
if not permits then
  -- Keys are deleted only where pruning changed them: a key that is not relock's stays as it is.
  if prune() > 0 then
    settle()
  end
  return -1
end
-- Publish first: Redis checks ACLs per command and does not roll a script back, so a user who
-- may not publish fails here with nothing changed. Nobody hears it before the script ends.
if publishCommand ~= '' then
  rcall(publishCommand, channel, message .. ':' .. permits)
end
prune()
local freed = free(owner)
settle()
return freed
