--[[
  A fair-mutex waiter gives up (timeout or abort): leave the queue; if the lock was handed to it
  meanwhile, pass the lock on to the next live waiter instead of stranding it.
  KEYS[1] lock hash   KEYS[2] fence counter   KEYS[3] queue list   KEYS[4] waiters hash
  ARGV[1] owner token  ARGV[2] release channel  ARGV[3] tombstone ms
  Returns 1 when the lock had been handed to ARGV[1] and was passed on, else 0.
]]
local lock, owner = KEYS[1], ARGV[1]
redis.call('LREM', KEYS[3], 0, owner)
redis.call('HDEL', KEYS[4], owner)
if redis.call('HEXISTS', lock, owner) == 0 then
  return 0
end
redis.call('HDEL', lock, owner, ':fence')
free_lock(lock, KEYS[2], KEYS[3], KEYS[4], ARGV[2], ARGV[3])
return 1
