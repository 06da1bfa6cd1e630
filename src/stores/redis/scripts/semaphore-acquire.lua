--[[
  Take `permits` of a semaphore for a fresh owner if they are free and no live waiter is queued
  ahead of it (FIFO: a large request at the head is not overtaken by small ones); else, in the same
  call, join the queue or refresh the owner's place there (a heartbeat), or only try.
  KEYS[1] meta   KEYS[2] holders   KEYS[3] leases   KEYS[4] queue (see _semaphore.lua)
  ARGV[1] owner token  ARGV[2] lease ms  ARGV[3] permits asked (>= 1)
  ARGV[4] the limit when none is stored (the semaphore's creation value)
  ARGV[5] the owner's client id (its channel gets the handoff; recorded as the holder's)
  ARGV[6] 'try' (never queue), 'tail' (join at the tail) or 'head' (rejoin at the head: a waiter
          that was handed its permits but let them lapse keeps its turn)
  ARGV[7] heartbeat allowance ms (a queued waiter not heard from for that long is dead)
  ARGV[8] waiters' channel prefix (a client's channel is ARGV[8] .. ':' .. its id)
  ARGV[9] 'SPUBLISH' (a Cluster: sharded pub/sub) or 'PUBLISH'
  ARGV[10] the waiter's place in the queue ('', '?' or its entry: see enqueue.lua)
  Returns {1, fence, holdCount, pttl} when ARGV[1] holds permits now (a resend, or a waiter claiming
  permits handed to it, gets its hold, lengthened to ARGV[2]); {0, pttl, '', ''} when it must wait
  (pttl: until the earliest lease runs out, -2 when none), with a fifth value when it was queued:
  its entry, its place for its next call; {-2, limit} when it asks more permits
  than the limit (it leaves the queue: it could never be served).
]]
local owner, lease, permits, client, mode, place = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3]), ARGV[5], ARGV[6], ARGV[10]
local s = open_semaphore(KEYS, tonumber(ARGV[4]), ARGV[8], ARGV[9])
local held = permit_holder(s, owner)
if held then
  drop_holder_entry(s.queue, place)
  return {1, tonumber(held.fence), held.count, lengthen_permit_lease(s, owner, lease)}
end
if permits > s.limit then
  drop_waiter(s.queue, owner, place)
  admit_permit_waiters(s, nil)
  return {-2, s.limit}
end
-- At the head and fitting (its entry is taken out here), or fitting with nobody queued.
local first = admit_permit_waiters(s, owner)
if first or (redis.call('LLEN', s.queue) == 0 and permits <= s.limit - s.used) then
  if first then
    redis.call('LPOP', s.queue)
  end
  local fence = new_permit_hold(s, owner, permits, client, lease)
  return {1, tonumber(fence), 1, lease}
end
local busy = {0, earliest_permit_expiry(s), '', ''}
if mode == 'try' then
  return busy
end
local allowance = tonumber(ARGV[7])
local fields = '|' .. client .. '|' .. lease .. '|' .. allowance .. '|' .. permits .. '|'
local _, entry = queue_waiter(s.queue, owner, fields, s.now, s.now, allowance, join_at(s.queue, mode), place)
busy[5] = entry
return busy
