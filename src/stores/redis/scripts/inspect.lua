--[[
  Read a lock's state without changing it: its hold and, given the queue's keys, its queue.
  KEYS[1] lock   KEYS[2] queue list (may be left out: then only the hold is read)
  ARGV[1] how many queued waiters to describe, from the queue's head (default 0)
  Returns {fence, pttl, {owner, count, clients}} while held (clients: the hold's clients field, see
  _lock.lua); {0, pttl, {}} when free. pttl is the lock key's
  PTTL: -2 when absent, the tombstone's when freed.
  With the queue's key, followed by: now (ms on the server's clock), the last fence (the lock key's,
  held or a tombstone's; 0 when absent), the queue's length and PTTL, and
  {owner, expiry, leaseMs, allowanceMs, kind, clientId, since, ...}: seven values per described
  waiter, in queue order (an entry padlock cannot read is given as {entry, 0, 0, 0, '', '', 0}).
]]
local state = read_lock(KEYS[1])
local held = state and state.count > 0
local result = {held and tonumber(state.fence) or 0, redis.call('PTTL', KEYS[1]), held and {state.owner, state.count, state.clients} or {}}
if #KEYS < 2 then
  return result
end
local queue = KEYS[2]
result[4] = server_now()
result[5] = state and tonumber(state.fence) or 0
result[6] = redis.call('LLEN', queue)
result[7] = redis.call('PTTL', queue)
result[8] = describe_waiters(queue, tonumber(ARGV[1] or 0))
return result
