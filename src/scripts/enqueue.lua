--[[
  As acquire.lua, but an owner that must wait joins the queue, or refreshes its place there (a
  heartbeat): the same call that finds the lock held queues its waiter, so no release can slip
  between the two.
  KEYS[1] lock hash   KEYS[2] fence counter   KEYS[3] queue list   KEYS[4] waiters hash
  ARGV[1] owner token  ARGV[2] lease ms  ARGV[3] kind: 'mutex' or 'fair'
  ARGV[4] client id (its channel gets the wake-up or handoff)
  ARGV[5] heartbeat allowance ms (the caller's heartbeat interval × 3: a queued waiter not heard
          from for that long is taken for dead and skipped)
  ARGV[6] where a new entry goes: 'tail', or 'head' (a woken mutex waiter that someone else beat to
          the lock keeps its turn)
  ARGV[7] the fence proposed for a fresh hold (Redlock; 0: the server's clock, see _fence.lua)
  Returns {1, fence, holdCount, pttl} when ARGV[1] holds the lock now (a fair waiter handed the
  lock claims it here, lengthened to its lease); {0, pttl} when it waits (queued; pttl as in
  acquire.lua).
  The waiter's entry is "expiry:leaseMs:allowanceMs:kind:clientId", expiry on the server's clock.
]]
local lock, queue, waiters, owner = KEYS[1], KEYS[3], KEYS[4], ARGV[1]
local taken = take(lock, KEYS[2], queue, waiters, owner, tonumber(ARGV[2]), ARGV[3], tonumber(ARGV[7]))
if taken then
  return taken
end
local allowance = tonumber(ARGV[5])
local entry = (server_now() + allowance) .. ':' .. ARGV[2] .. ':' .. allowance .. ':' .. ARGV[3] .. ':' .. ARGV[4]
if redis.call('HSET', waiters, owner, entry) == 1 then
  if ARGV[6] == 'head' then
    redis.call('LPUSH', queue, owner)
  else
    redis.call('RPUSH', queue, owner)
  end
end
-- The queue's keys outlive their last live waiter by one allowance at most. Only ever lengthened:
-- a waiter with a short allowance must not cut short the entries of waiters with longer ones.
lengthen(queue, allowance * 2)
lengthen(waiters, allowance * 2)
return {0, redis.call('PTTL', lock)}
