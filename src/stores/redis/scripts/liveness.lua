--[[
  Keep a client's liveness key (one per Padlock, refreshed while it holds or waits for a lock), or
  drop it (the Padlock closed). A hold whose clients' liveness keys are all gone is reaped (reap.lua).
  KEYS[1] P:client:<clientId>
  ARGV[1] ms: the key lives exactly this long from now (SET … PX); 0 deletes it
  Returns 1.
]]
local ms = tonumber(ARGV[1])
if ms > 0 then
  redis.call('SET', KEYS[1], '1', 'PX', ms)
else
  redis.call('DEL', KEYS[1])
end
return 1
