--[[
  Gives back what a failed Redlock attempt on a read-write lock took on one master: the attempt's
  own hold (a new owner's, count 1), with the `writer` field when it is the writer, and both keys
  when no hold is left. Publishes nothing, as lua/lock/quorum-rollback-1.lua: a waiter that failed
  beside this attempt saw either a holder of a majority (whose release will publish) or a split
  between holders (and retries on a short random timer).

  Input:
    KEYS[1] rw hash: `writer` -> write owner; `r:<owner>` / `w:<owner>` -> hold count
    KEYS[2] leases zset: `r:<owner>` / `w:<owner>` -> lease end, Redis TIME in ms
    ARGV[1] the attempt's member: "r:<owner>" or "w:<owner>"

  Output: an integer
    1  the attempt held something here and it is gone
    0  the attempt held nothing here: nothing is written
]]
local hashKey, leasesKey = KEYS[1], KEYS[2]
local member = ARGV[1]
local rcall = redis.call

if rcall('HDEL', hashKey, member) == 0 then
  rcall('ZREM', leasesKey, member)
  return 0
end
rcall('ZREM', leasesKey, member)
if string.sub(member, 1, 2) == 'w:' and rcall('HGET', hashKey, 'writer') == string.sub(member, 3) then
  rcall('HDEL', hashKey, 'writer')
end
if rcall('ZCARD', leasesKey) == 0 then
  rcall('DEL', hashKey, leasesKey)
end
return 1
