--[[
  Release holds of a mutex or fair mutex; the last one frees the lock: the first live waiter of
  the queue is handed the lock (fair) or woken (mutex).
  KEYS[1] lock   KEYS[2] queue list
  ARGV[1] owner token  ARGV[2] holds to release (>= 1)  ARGV[3] request id
  ARGV[4] waiters' channel prefix (a client's channel is ARGV[4] .. ':' .. its id)
  ARGV[5] 'SPUBLISH' (a Cluster: sharded pub/sub) or 'PUBLISH'
  Returns {1, remaining holds} (0: the owner holds nothing now); {0} when ARGV[1] held nothing.
  The request is logged in the lock (kept in its tombstone), so a resent release is recognised.
]]
local lock, owner, req = KEYS[1], ARGV[1], ARGV[3]
local value = redis.call('GET', lock)
local first
-- The common cases, with the fewest steps: the owner's last hold released, a first send (not in
-- the log), and nobody queued, or a live mutex waiter at the head, who is woken (a contended
-- mutex's release): the lock is left free, its tombstone written from the hold's text. Any other
-- head (a fair waiter to hand the lock to, a dead one) takes the general way below, which is
-- handed that head, already popped.
if value then
  local fence, holder, count, log = string.match(value, '^(%d+)|([^|]*)|(%d+)|[^|]*|(.*)$')
  if holder == owner and count == '1' and not seen(log, req) then
    first = redis.call('LPOP', KEYS[2])
    if not first or wake_mutex_head(first, owner, ARGV[4], publish_command(ARGV[5])) then
      redis.call('SET', lock, fence .. '||0||' .. remember(log, req), 'PX', FENCE_RETENTION_MS)
      return {1, 0}
    end
  end
end
-- @helpers
local state = parse_lock(lock, value)
if not state then
  return {0}
end
if seen(state.log, req) then
  return {1, state.owner == owner and state.count or 0}
end
if state.count == 0 or state.owner ~= owner then
  return {0}
end
state.log = remember(state.log, req)
state.count = math.max(0, state.count - tonumber(ARGV[2]))
if state.count > 0 then
  write_lock(lock, state, nil)
  return {1, state.count}
end
free_lock(lock, state, KEYS[2], ARGV[4], publish_command(ARGV[5]), first)
return {1, 0}
