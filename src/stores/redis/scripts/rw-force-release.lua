--[[
  Read/write lock: take away every hold of one side whoever holds it (operators), then admit the
  queued waiters the lock now allows, as a release does. The fence is kept: the next write's is
  greater. Holders are told by the caller (tell-holders.lua), or at their next renewal (rw-renew.lua
  returns 0).
  KEYS[1] state hash   KEYS[2] leases sorted set   KEYS[3] queue list
  ARGV[1] side: 'read' or 'write'   ARGV[2] waiters' channel prefix   ARGV[3] 'SPUBLISH' or 'PUBLISH'
  Returns 1 when that side was held, else 0.
]]
local state, leases, queue = KEYS[1], KEYS[2], KEYS[3]
local now = server_now()
rw_prune(state, leases, now)
local prefix = ARGV[1] == 'write' and 'w:' or 'r:'
local held = 0
for _, member in ipairs(redis.call('ZRANGE', leases, 0, -1)) do
  if string.sub(member, 1, 2) == prefix then
    rw_drop(state, leases, member)
    held = 1
  end
end
rw_admit(state, leases, queue, now, ARGV[2], publish_command(ARGV[3]), '')
rw_keep(state, leases, now)
return held
