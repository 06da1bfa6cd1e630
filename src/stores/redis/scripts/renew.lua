--[[
  Renew many holds in one call (the watchdog's batch), or extend one.
  KEYS[1..n] locks (one Cluster slot per call)
  ARGV[2i-1] owner token of KEYS[i]   ARGV[2i] lease ms for KEYS[i]
  Returns a list: for each KEYS[i], its remaining lease in ms when ARGV[2i-1] still holds it
  (extended to at least ARGV[2i], never shortened), or 0 when it does not.
]]
local result = {}
for i, lock in ipairs(KEYS) do
  local state = read_lock(lock)
  if state and state.count > 0 and state.owner == ARGV[2 * i - 1] then
    result[i] = lengthen(lock, tonumber(ARGV[2 * i]))
  else
    result[i] = 0
  end
end
return result
