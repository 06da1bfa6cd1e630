--[[
  Re-enter: one more hold for an owner that holds the lock. The fence stays; the lease becomes
  max(remaining, ARGV[2]), never shorter. Recorded in the request log, so a resend counts once.
  KEYS[1] lock hash
  ARGV[1] owner token  ARGV[2] lease ms  ARGV[3] request id
  Returns {1, fence, holdCount, pttl}; {-1} when ARGV[1] holds nothing.
]]
local lock, owner, req = KEYS[1], ARGV[1], ARGV[3]
local count = tonumber(redis.call('HGET', lock, owner) or 0)
if count == 0 then
  return {-1}
end
local log = read_log(lock)
if seen(log, req) then
  return {1, tonumber(redis.call('HGET', lock, ':fence')), count, redis.call('PTTL', lock)}
end
count = redis.call('HINCRBY', lock, owner, 1)
remember(lock, log, req)
return {1, tonumber(redis.call('HGET', lock, ':fence')), count, lengthen(lock, tonumber(ARGV[2]))}
