--[[
  Free a lock whoever holds it (operators), as a release does: the queue's first live waiter is
  handed the lock (fair) or woken (mutex).
  KEYS[1] lock   KEYS[2] queue list
  ARGV[1] waiters' channel prefix  ARGV[2] 'SPUBLISH' (a Cluster: sharded pub/sub) or 'PUBLISH'
  Returns 1 when the lock was held, 0 when it was free. The fence is kept (in the tombstone): the
  next hold's is greater.
]]
local state = read_lock(KEYS[1])
if not state or state.count == 0 then
  return 0
end
free_lock(KEYS[1], state, KEYS[2], ARGV[1], publish_command(ARGV[2]))
return 1
