--[[
  Read/write lock: release holds of one side; the last one frees it, and the queued waiters the
  lock now allows are admitted in the same script (a writer when nobody holds; the readers at the
  head, together, when no writer holds), each told on its client's channel.
  KEYS[1] state hash   KEYS[2] leases sorted set   KEYS[3] queue list
  ARGV[1] side: 'read' or 'write'   ARGV[2] owner token   ARGV[3] holds to release (>= 1)
  ARGV[4] request id   ARGV[5] waiters' channel prefix   ARGV[6] 'SPUBLISH' (a Cluster) or 'PUBLISH'
  Returns {1, remaining holds} (0: the owner holds nothing on that side now); {0} when it held
  nothing there. The request is logged (the hash outlives the holds), so a resend is recognised.
]]
local state, leases, queue = KEYS[1], KEYS[2], KEYS[3]
local side, owner, req = ARGV[1], ARGV[2], ARGV[4]
local now = server_now()
rw_prune(state, leases, now)
local member = rw_member(side, owner)
local log = redis.call('HGET', state, 'log') or ' '
local held = redis.call('ZSCORE', leases, member)
if seen(log, req) then
  return {1, held and tonumber(redis.call('HGET', state, member)) or 0}
end
if not held then
  return {0}
end
redis.call('HSET', state, 'log', rw_remember(log, req))
local count = math.max(0, tonumber(redis.call('HGET', state, member)) - tonumber(ARGV[3]))
if count > 0 then
  redis.call('HSET', state, member, count)
else
  rw_drop(state, leases, member)
  rw_admit(state, leases, queue, now, ARGV[5], publish_command(ARGV[6]), '')
end
rw_keep(state, leases, now)
return {1, count}
