--[[
  Renew many semaphore holds in one call (the watchdog's batch), or extend one.
  KEYS[3i-2] meta   KEYS[3i-1] holders   KEYS[3i] leases of hold i (one Cluster slot per call)
  ARGV[2i-1] owner token of hold i   ARGV[2i] lease ms for hold i
  Returns a list: for each hold, its remaining lease in ms when its owner still holds permits
  (extended to at least ARGV[2i], never shortened), or 0 when it does not (released, or its lease
  ran out on the server's clock: it is never revived).
]]
local now = server_now()
local result = {}
for i = 1, #KEYS / 3 do
  local s = {meta = KEYS[3 * i - 2], holders = KEYS[3 * i - 1], leases = KEYS[3 * i], now = now}
  local owner = ARGV[2 * i - 1]
  local expiry = tonumber(redis.call('ZSCORE', s.leases, owner))
  if expiry and expiry > now and redis.call('HEXISTS', s.holders, owner) == 1 then
    result[i] = lengthen_permit_lease(s, owner, tonumber(ARGV[2 * i]))
  else
    result[i] = 0
  end
end
return result
