--[[
  Free every permit of a semaphore whoever holds it (operators); the queue's head waiters that now
  fit are admitted. The fence and a stored limit are kept (meta).
  KEYS[1] meta   KEYS[2] holders   KEYS[3] leases   KEYS[4] queue
  ARGV[1] the limit when none is stored  ARGV[2] waiters' channel prefix
  ARGV[3] 'SPUBLISH' (a Cluster) or 'PUBLISH'
  Returns 1 when any permit was held, 0 when none was.
]]
local s = open_semaphore(KEYS, tonumber(ARGV[1]), ARGV[2], ARGV[3])
local held = s.used > 0
redis.call('DEL', s.holders, s.leases)
s.used = 0
admit_permit_waiters(s, nil)
return held and 1 or 0
