--[[
  Delete a lock whoever holds it (operators), and free it as a release does: the queue's first
  live waiter is handed the lock (fair) or woken (mutex); unless handed over, the release is
  announced on ARGV[1].
  KEYS[1] lock hash   KEYS[2] fence counter   KEYS[3] queue list   KEYS[4] waiters hash
  ARGV[1] release channel  ARGV[2] tombstone ms (unused in effect: the hash and its request log
          are deleted, so no tombstone is left)
  ARGV[3] 'SPUBLISH' (a Cluster: sharded pub/sub) or 'PUBLISH'
  Returns 1 when the lock was held, 0 when it was free. The fence counter is kept.
]]
local held = redis.call('HEXISTS', KEYS[1], ':fence')
redis.call('DEL', KEYS[1])
if held == 1 then
  free_lock(KEYS[1], KEYS[2], KEYS[3], KEYS[4], ARGV[1], ARGV[2], publish_command(ARGV[3]))
end
return held
