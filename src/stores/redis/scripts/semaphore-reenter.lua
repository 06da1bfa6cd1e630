--[[
  Re-enter: one more hold for an owner that holds permits of the semaphore, on the same permits
  (whatever a re-entry asks). The fence stays; the lease becomes max(remaining, ARGV[2]), never
  shorter. Recorded in the holder's request log, so a resend counts once. The re-entering client joins the
  hold's clients.
  KEYS[1] meta   KEYS[2] holders   KEYS[3] leases   KEYS[4] queue
  ARGV[1] owner token  ARGV[2] lease ms  ARGV[3] request id  ARGV[4] the re-entering client's id
  ARGV[5] the limit when none is stored  ARGV[6] waiters' channel prefix
  ARGV[7] 'SPUBLISH' (a Cluster) or 'PUBLISH'
  Returns {1, fence, holdCount, pttl}; {-1} when ARGV[1] holds nothing.
]]
local owner, req = ARGV[1], ARGV[3]
local s = open_semaphore(KEYS, tonumber(ARGV[5]), ARGV[6], ARGV[7])
admit_permit_waiters(s, nil)
local h = permit_holder(s, owner)
if not h then
  return {-1}
end
if not permit_request_seen(s, h, req) then
  h.log = with_request(h.log, req, HOLDER_LOG_ENTRIES)
  h.count = h.count + 1
  h.clients = with_client(h.clients, ARGV[4])
  write_permit_holder(s, owner, h)
end
return {1, tonumber(h.fence), h.count, lengthen_permit_lease(s, owner, tonumber(ARGV[2]))}
