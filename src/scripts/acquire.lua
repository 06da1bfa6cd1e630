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
-- A try is a fresh owner's first call (a wait queues with enqueue.lua after it, never before):
-- the owner is in no queue, so take() need not look for it there.
local taken, state = take(KEYS[1], KEYS[2], ARGV[1], tonumber(ARGV[2]), ARGV[3], tonumber(ARGV[4]), ARGV[5], nil)
return taken or busy(KEYS[1], state)
