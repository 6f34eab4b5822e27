--[[
  Reads an election at one moment: who leads, and what observers need to order it.

  Input:
    KEYS[1] leader key: hash of the owner field -> 1, and the term: "candidate", "epoch", "since"
    KEYS[2] epoch key: string, the last epoch issued

  Output: an array
    { candidate, epoch, since, pttl }  someone leads (epoch and since as decimal strings; pttl the
                                       milliseconds left of the term's lease, -1 without expiry)
    { false, last }                    nobody leads; last is the epoch key's value ("0" when gone):
                                       every term up to it has ended
    error                              WRONGTYPE when the leader key holds another type
]]
local leaderKey, fenceKey = KEYS[1], KEYS[2]
local rcall = redis.call

local kind = rcall('TYPE', leaderKey)['ok']
if kind == 'none' then
  return { false, rcall('GET', fenceKey) or '0' }
end
if kind ~= 'hash' then
  return redis.error_reply('WRONGTYPE the leader key holds a value that is not a leader hash')
end
local term = rcall('HMGET', leaderKey, 'candidate', 'epoch', 'since')
return { term[1], term[2], term[3], rcall('PTTL', leaderKey) }
