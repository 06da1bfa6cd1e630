--[[
  Read/write lock: a queued waiter gives up (timeout, abort or close) after a call that may have
  queued it. It leaves the queue; a hold it was handed meanwhile (or granted to an attempt whose
  reply it no longer waited for) is freed; and whoever the lock now allows is admitted, so that
  neither a hold nor a turn is stranded. Safe to run again, or for an owner never queued.
  KEYS[1] state hash   KEYS[2] leases sorted set   KEYS[3] queue list
  ARGV[1] owner token (fresh: it holds nothing but what this wait gave it)
  ARGV[2] waiters' channel prefix   ARGV[3] 'SPUBLISH' (a Cluster) or 'PUBLISH'
  Returns 1 when the owner held something, which was freed, else 0.
]]
local state, leases, queue, owner = KEYS[1], KEYS[2], KEYS[3], ARGV[1]
local now = server_now()
drop_waiter(queue, owner, '?')
rw_prune(state, leases, now)
local freed = 0
for _, side in ipairs({'read', 'write'}) do
  local member = rw_member(side, owner)
  if redis.call('ZSCORE', leases, member) then
    rw_drop(state, leases, member)
    freed = 1
  end
end
rw_admit(state, leases, queue, now, ARGV[2], publish_command(ARGV[3]), '')
rw_keep(state, leases, now)
return freed
