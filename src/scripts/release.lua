--[[
  Release holds of a mutex or fair mutex; the last one frees the lock: the first live waiter of
  the queue is handed the lock (fair) or woken (mutex), and unless it was handed over the release
  is announced on ARGV[4].
  KEYS[1] lock hash   KEYS[2] fence counter   KEYS[3] queue list   KEYS[4] waiters hash
  ARGV[1] owner token  ARGV[2] holds to release (>= 1)  ARGV[3] request id
  ARGV[4] release channel (a client's channel is ARGV[4] .. ':' .. its id)  ARGV[5] tombstone ms
  ARGV[6] 'SPUBLISH' (a Cluster: sharded pub/sub) or 'PUBLISH'
  Returns {1, remaining holds} (0: the owner holds nothing now); {0} when ARGV[1] held nothing.
  A freed lock not handed over keeps only its ':log' for ARGV[5] ms, so a resent release is still
  recognised.
]]
local lock, owner, req = KEYS[1], ARGV[1], ARGV[3]
local log = read_log(lock)
if seen(log, req) then
  return {1, tonumber(redis.call('HGET', lock, owner) or 0)}
end
local count = tonumber(redis.call('HGET', lock, owner) or 0)
if count == 0 then
  return {0}
end
remember(lock, log, req)
count = count - tonumber(ARGV[2])
if count > 0 then
  redis.call('HSET', lock, owner, count)
  return {1, count}
end
redis.call('HDEL', lock, owner, ':fence')
free_lock(lock, KEYS[2], KEYS[3], KEYS[4], ARGV[4], ARGV[5], publish_command(ARGV[6]))
return {1, 0}
