--[[
  Read/write lock: take a hold on one side for a fresh owner if the lock allows it now, else (unless
  'try') join the queue or refresh the owner's place there (a heartbeat). Writer-preferring: a read
  is granted only while no writer holds and nobody is queued (a queued writer makes new readers
  queue behind it); a write only while nobody holds and nobody is queued. Queued waiters the lock
  allows are admitted first (rw_admit), so a waiter at the head is never passed over.
  KEYS[1] state hash   KEYS[2] leases sorted set   KEYS[3] queue list
  ARGV[1] side: 'read' or 'write'   ARGV[2] owner token   ARGV[3] lease ms
  ARGV[4] 'try' (never queue), 'tail' (join at the tail) or 'head' (at the head)
  ARGV[5] client id (its channel is told when a queued owner is admitted)
  ARGV[6] heartbeat allowance ms (a queued waiter not heard from for that long is taken for dead)
  ARGV[7] downgrade: the owner of the write hold the caller runs under ('' none): a read for it is
          granted whatever is queued, while that owner holds the write lock
  ARGV[8] waiters' channel prefix   ARGV[9] 'SPUBLISH' (a Cluster) or 'PUBLISH'
  ARGV[10] the waiter's place in the queue ('', '?' or its entry: see enqueue.lua)
  Returns {1, fence, holdCount, pttl} when ARGV[2] holds that side now (a resend, or a waiter
  admitted meanwhile, gets its state, the lease lengthened to ARGV[3]); {0, pttl, '', ''} when it
  must wait (pttl: the longest remaining lease of the holds in its way, ms), with a fifth value
  when it was queued: its entry, its place for its next call.
]]
local state, leases, queue = KEYS[1], KEYS[2], KEYS[3]
local side, owner, lease, mode, client = ARGV[1], ARGV[2], tonumber(ARGV[3]), ARGV[4], ARGV[5]
local allowance = tonumber(ARGV[6])
local now = server_now()
rw_prune(state, leases, now)
rw_admit(state, leases, queue, now, ARGV[8], publish_command(ARGV[9]), owner)
local member = rw_member(side, owner)
local expiry = redis.call('ZSCORE', leases, member)
if expiry then
  drop_holder_entry(queue, ARGV[10])
  expiry = math.max(tonumber(expiry), now + lease)
  redis.call('ZADD', leases, expiry, member)
  rw_keep(state, leases, now)
  return {1, tonumber(redis.call('HGET', state, 'fence')), tonumber(redis.call('HGET', state, member)), expiry - now}
end
local writer = redis.call('HGET', state, 'writer')
local allowed
if side == 'read' and ARGV[7] ~= '' and writer == ARGV[7] then
  allowed = true
elseif side == 'write' then
  allowed = redis.call('ZCARD', leases) == 0 and redis.call('LLEN', queue) == 0
else
  allowed = not writer and redis.call('LLEN', queue) == 0
end
if allowed then
  local fence = rw_grant(state, leases, side, owner, lease, now)
  rw_keep(state, leases, now)
  return {1, tonumber(fence), 1, lease}
end
local busy = {0, rw_longest(leases, now), '', ''}
if mode == 'try' then
  return busy
end
local fields = '|' .. client .. '|' .. lease .. '|' .. allowance .. '|' .. side .. '|'
local _, entry = queue_waiter(queue, owner, fields, now, now, allowance, join_at(queue, mode), ARGV[10])
busy[5] = entry
return busy
