--[[
  Release holds of a reentrant mutex; the last one frees the lock and announces it.
  KEYS[1] lock hash
  ARGV[1] owner token  ARGV[2] holds to release (>= 1)  ARGV[3] request id
  ARGV[4] release channel  ARGV[5] tombstone ms
  Returns {1, remaining holds} (0: the lock is free now); {0} when ARGV[1] holds nothing.
  A freed lock keeps only its ':log' for ARGV[5] ms, so a resent release is still recognised.
]]
local lock, owner, req = KEYS[1], ARGV[1], ARGV[3]
if seen(lock, req) then
  return {1, tonumber(redis.call('HGET', lock, owner) or 0)}
end
local count = tonumber(redis.call('HGET', lock, owner) or 0)
if count == 0 then
  return {0}
end
remember(lock, req)
count = count - tonumber(ARGV[2])
if count > 0 then
  redis.call('HSET', lock, owner, count)
  return {1, count}
end
redis.call('HDEL', lock, owner, ':fence')
redis.call('PEXPIRE', lock, ARGV[5])
redis.call('PUBLISH', ARGV[4], 'released')
return {1, 0}
