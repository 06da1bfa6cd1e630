--[[
  Read/write lock: one more hold on one side for an owner that holds it (the lease becomes
  max(remaining, ARGV[3]), never shorter; the fence stays). On the read side, an owner that holds
  the write lock but not the read lock is granted a read hold (a downgrade by owner token). On the
  write side, an owner that holds only the read lock is refused: an upgrade would wait for itself.
  Recorded in the request log, so a resend counts once.
  KEYS[1] state hash   KEYS[2] leases sorted set
  ARGV[1] side: 'read' or 'write'   ARGV[2] owner token   ARGV[3] lease ms   ARGV[4] request id
  Returns {1, fence, holdCount, pttl}; {-1} when the owner holds nothing there; {-2} when it holds
  the read lock and asked for the write lock (an upgrade: refused, nothing changed).
]]
local state, leases = KEYS[1], KEYS[2]
local side, owner, lease, req = ARGV[1], ARGV[2], tonumber(ARGV[3]), ARGV[4]
local now = server_now()
rw_prune(state, leases, now)
local member = rw_member(side, owner)
local log = redis.call('HGET', state, 'log') or ' '
local expiry = redis.call('ZSCORE', leases, member)
if expiry and seen(log, req) then
  return {1, tonumber(redis.call('HGET', state, 'fence')), tonumber(redis.call('HGET', state, member)), tonumber(expiry) - now}
end
local count
if expiry then
  count = redis.call('HINCRBY', state, member, 1)
  expiry = math.max(tonumber(expiry), now + lease)
  redis.call('ZADD', leases, expiry, member)
elseif side == 'read' and redis.call('HGET', state, 'writer') == owner then
  rw_grant(state, leases, 'read', owner, lease, now)
  count, expiry = 1, now + lease
elseif side == 'write' and redis.call('ZSCORE', leases, rw_member('read', owner)) then
  return {-2}
else
  return {-1}
end
redis.call('HSET', state, 'log', rw_remember(log, req))
rw_keep(state, leases, now)
return {1, tonumber(redis.call('HGET', state, 'fence')), count, expiry - now}
