--[[
  A waiter gives up (timeout, abort or close) after sending a call that may have queued it, answered
  or not: it leaves the queue; a lock it holds meanwhile (handed to it, or granted to an attempt it
  abandoned) is freed as release.lua frees it, and a wake-up it will not use goes to the next live
  waiter, instead of either being stranded. Run again, it only gives a free lock's turn to the next
  live waiter again.
  KEYS[1] lock   KEYS[2] queue list
  ARGV[1] owner token  ARGV[2] waiters' channel prefix
  ARGV[3] 'SPUBLISH' (a Cluster: sharded pub/sub) or 'PUBLISH'
  ARGV[4] 'only' to leave the queue and do nothing more (Redlock: an owner that holds the lock on a
          majority leaves the queues of the other masters; a turn it got there is not passed on,
          since it holds the lock)
  Returns 1 when ARGV[1] held the lock and it was passed on, else 0.
]]
local lock, queue, owner = KEYS[1], KEYS[2], ARGV[1]
-- A waiter that gives up may have a call in flight: it cannot know its place, so the queue is searched.
drop_waiter(queue, owner, '?')
if ARGV[4] == 'only' then
  return 0
end
local state = read_lock(lock)
local publish = publish_command(ARGV[3])
if state and state.count > 0 then
  if state.owner ~= owner then
    return 0
  end
  free_lock(lock, state, queue, ARGV[2], publish)
  return 1
end
hand_off(lock, state, queue, ARGV[2], publish)
return 0
