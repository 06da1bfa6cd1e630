--[[
  Release holds of a semaphore's owner; the last one returns its permits, and the queue's head
  waiters that now fit are handed theirs (_semaphore.lua, admit_permit_waiters).
  KEYS[1] meta   KEYS[2] holders   KEYS[3] leases   KEYS[4] queue
  ARGV[1] owner token  ARGV[2] holds to release (>= 1)  ARGV[3] request id
  ARGV[4] the limit when none is stored  ARGV[5] waiters' channel prefix
  ARGV[6] 'SPUBLISH' (a Cluster) or 'PUBLISH'
  Returns {1, remaining holds} (0: the owner holds nothing now); {0} when ARGV[1] held nothing.
  The request is logged (a partial release in the holder's own log, a final one in meta's), so a
  resent release is recognised and counts once.
]]
local owner, req = ARGV[1], ARGV[3]
local s = open_semaphore(KEYS, tonumber(ARGV[4]), ARGV[5], ARGV[6])
local h = permit_holder(s, owner)
local seen, log = permit_request_seen(s, h, req)
if seen then
  admit_permit_waiters(s, nil)
  return {1, h and h.count or 0}
end
if not h then
  admit_permit_waiters(s, nil)
  return {0}
end
h.count = math.max(0, h.count - tonumber(ARGV[2]))
if h.count > 0 then
  h.log = with_request(h.log, req, HOLDER_LOG_ENTRIES)
  write_permit_holder(s, owner, h)
else
  drop_permit_hold(s, owner, h)
  remember_final_release(s, log, req)
end
admit_permit_waiters(s, nil)
return {1, h.count}
