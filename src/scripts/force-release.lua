--[[
  Delete a lock whoever holds it (operators), and wake its waiters.
  KEYS[1] lock hash
  ARGV[1] release channel
  Returns 1 when the lock was held, 0 when it was free. The fence counter is kept.
]]
local held = redis.call('HEXISTS', KEYS[1], ':fence')
redis.call('DEL', KEYS[1])
if held == 1 then
  redis.call('PUBLISH', ARGV[1], 'released')
end
return held
