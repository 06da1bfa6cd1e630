--[[
  A waiter gives up (timeout, abort or close) after sending a call that may have queued it: it
  leaves the queue, permits handed to it meanwhile (or granted to an attempt it abandoned) return,
  and the head waiters that now fit are admitted (a large request leaving the head may let smaller
  ones behind it in). Idempotent.
  KEYS[1] meta   KEYS[2] holders   KEYS[3] leases   KEYS[4] queue
  ARGV[1] owner token  ARGV[2] the limit when none is stored  ARGV[3] waiters' channel prefix
  ARGV[4] 'SPUBLISH' (a Cluster) or 'PUBLISH'
  Returns 1 when ARGV[1] held permits and they were returned, else 0.
]]
local owner = ARGV[1]
local s = open_semaphore(KEYS, tonumber(ARGV[2]), ARGV[3], ARGV[4])
drop_waiter(s.queue, owner, '?')
local h = permit_holder(s, owner)
if h then
  drop_permit_hold(s, owner, h)
end
admit_permit_waiters(s, nil)
return h and 1 or 0
