--[[
  Acquire or re-enter a reentrant mutex, with its fence, in one round trip.
  KEYS[1] lock hash   KEYS[2] fence counter
  ARGV[1] owner token ARGV[2] lease ms  ARGV[3] request id  ARGV[4] '1' = re-entry only
  Returns {1, fence, holdCount, pttl} when ARGV[1] holds the lock now;
          {0, pttl} when another owner holds it;
          {-1} when ARGV[4] asks for a re-entry and ARGV[1] holds nothing.
  A fresh hold takes the next fence and exactly its lease; a re-entry keeps the fence and never
  shortens the lease. Re-entries are recorded in the request log; a fresh attempt needs no entry
  (its owner token is new, so finding that owner holding can only mean the call was resent).
]]
local lock, owner, req = KEYS[1], ARGV[1], ARGV[3]
local lease = tonumber(ARGV[2])
local count = tonumber(redis.call('HGET', lock, owner) or 0)
if count > 0 then
  local log = read_log(lock)
  -- A fresh attempt carries a new owner token: finding it holding means the call was resent.
  if ARGV[4] ~= '1' or seen(log, req) then
    return {1, tonumber(redis.call('HGET', lock, ':fence')), count, redis.call('PTTL', lock)}
  end
  count = redis.call('HINCRBY', lock, owner, 1)
  remember(lock, log, req)
  return {1, tonumber(redis.call('HGET', lock, ':fence')), count, lengthen(lock, lease)}
elseif ARGV[4] == '1' then
  return {-1}
elseif redis.call('HEXISTS', lock, ':fence') == 1 then
  return {0, redis.call('PTTL', lock)}
end
-- Fresh: exactly the lease asked for (a freed lock's tombstone TTL must not leak into it).
local fence = redis.call('INCR', KEYS[2])
redis.call('HSET', lock, owner, 1, ':fence', fence)
redis.call('PEXPIRE', lock, lease)
return {1, fence, 1, lease}
