--[[
  A waiter gives up (timeout, abort or close) after sending a call that may have queued it, answered
  or not: it leaves the queue; a lock it holds meanwhile (handed to it, or granted to an attempt it
  abandoned) is freed as release.lua frees it, and a wake-up it will not use goes to the next live
  waiter, instead of either being stranded. Run again, it only gives a free lock's turn to the next
  live waiter again.
  KEYS[1] lock hash   KEYS[2] fence counter   KEYS[3] queue list   KEYS[4] waiters hash
  ARGV[1] owner token  ARGV[2] release channel  ARGV[3] tombstone ms
  ARGV[4] 'SPUBLISH' (a Cluster: sharded pub/sub) or 'PUBLISH'
  Returns 1 when ARGV[1] held the lock and it was passed on, else 0.
]]
local lock, owner = KEYS[1], ARGV[1]
if redis.call('HDEL', KEYS[4], owner) == 1 then
  redis.call('LREM', KEYS[3], 1, owner)
end
if redis.call('HEXISTS', lock, owner) == 1 then
  redis.call('HDEL', lock, owner, ':fence')
  free_lock(lock, KEYS[2], KEYS[3], KEYS[4], ARGV[2], ARGV[3], publish_command(ARGV[4]))
  return 1
end
if redis.call('HEXISTS', lock, ':fence') == 0 then
  -- The lock is free: this waiter may have been woken for it. Wake the next one in its place.
  hand_off(lock, KEYS[2], KEYS[3], KEYS[4], ARGV[2], publish_command(ARGV[4]))
end
return 0
