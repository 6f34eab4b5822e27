--[[
  Gives back what a failed Redlock attempt took on one master: the attempt's own owner field, and
  the lock with it when nothing else is in the hash. Publishes nothing: a waiter that failed
  beside this attempt saw either another owner holding a majority (whose release will publish) or
  a split between owners (and retries on a short random timer).

  Input:
    KEYS[1] lock key: hash of owner field -> hold count
    ARGV[1] owner field of the failed attempt

  Output: an integer
    1  the attempt's field was there and is gone (the lock too, if it was the only field)
    0  the attempt held nothing here: nothing is written
]]
local lockKey = KEYS[1]
local owner = ARGV[1]
local rcall = redis.call

return rcall('HDEL', lockKey, owner)
