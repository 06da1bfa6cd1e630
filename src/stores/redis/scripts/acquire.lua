--[[
  Take a lock for a fresh owner if it is free (fair: and no live waiter is queued ahead); never
  queue. One attempt: `tryAcquire`, and a waiter's first try.
  KEYS[1] lock   KEYS[2] queue list
  ARGV[1] owner token  ARGV[2] lease ms  ARGV[3] kind: 'mutex' or 'fair'
  ARGV[4] the fence proposed for a fresh hold (Redlock; 0: none, see _lock.lua)
  ARGV[5] the owner's client id, recorded as the holder's (the client keeps its liveness key)
  Returns {1, fence, holdCount, pttl} when ARGV[1] holds the lock now (a resend returns the state);
  {0, pttl, holder, clients} when it must wait (pttl: the lock key's PTTL, the holder's remaining
  lease, which bounds the waiter's fallback timer; for a fair lock that is free but has a live
  waiter ahead, its tombstone's or -2; holder and clients: the current hold's owner and clients,
  '' when none).
]]
local lock, kind, proposed = KEYS[1], ARGV[3], ARGV[4]
local value = redis.call('GET', lock)
-- The common case, with the fewest steps: the lock free (its tombstone there; for a mutex with a
-- fence proposed, or no key at all), and for a fair lock nobody queued. The hold is written from the
-- tombstone's text (next fence, or the proposal where greater; its request log kept), the same hold
-- take() below would write.
if kind == 'mutex' or kind == 'fair' then
  local fence, log
  if value then
    local last, count, kept = string.match(value, '^(%d+)|[^|]*|(%d+)|[^|]*|(.*)$')
    if count == '0' and last ~= '0' then
      fence, log = fence_after(last), kept
    end
  elseif kind == 'mutex' and proposed ~= '0' then
    fence, log = '0', ' '
  end
  if fence and proposed ~= '0' then
    fence = proposed_fence(fence, proposed)
  end
  if fence and (kind == 'mutex' or not redis.call('LINDEX', KEYS[2], 0)) then
    redis.call('SET', lock, fence .. '|' .. ARGV[1] .. '|1|' .. ARGV[5] .. '|' .. log, 'PX', ARGV[2])
    return {1, tonumber(fence), 1, tonumber(ARGV[2])}
  end
end
-- @helpers
-- A try is a fresh owner's first call (a wait queues with enqueue.lua after it, never before):
-- the owner is in no queue, so take() need not look for it there.
local taken, state = take(lock, KEYS[2], ARGV[1], tonumber(ARGV[2]), kind, tonumber(ARGV[4]), ARGV[5], nil, value)
return taken or busy(lock, state)
