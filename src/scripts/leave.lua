--[[
  A queued waiter gives up (timeout or abort): it leaves the queue; a lock handed to it meanwhile,
  or a wake-up it will not use, goes on to the next live waiter instead of being stranded.
  KEYS[1] lock hash   KEYS[2] fence counter   KEYS[3] queue list   KEYS[4] waiters hash
  ARGV[1] owner token  ARGV[2] release channel  ARGV[3] tombstone ms
  Returns 1 when the lock had been handed to ARGV[1] and was passed on, else 0.
]]
local lock, owner = KEYS[1], ARGV[1]
if redis.call('HDEL', KEYS[4], owner) == 1 then
  redis.call('LREM', KEYS[3], 1, owner)
end
if redis.call('HEXISTS', lock, owner) == 1 then
  redis.call('HDEL', lock, owner, ':fence')
  free_lock(lock, KEYS[2], KEYS[3], KEYS[4], ARGV[2], ARGV[3])
  return 1
end
if redis.call('HEXISTS', lock, ':fence') == 0 then
  -- The lock is free: this waiter may have been woken for it. Wake the next one in its place.
  hand_off(lock, KEYS[2], KEYS[3], KEYS[4], ARGV[2])
end
return 0
