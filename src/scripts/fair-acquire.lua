--[[
  Acquire, queue for, or re-enter a fair (FIFO) mutex.
  KEYS[1] lock hash   KEYS[2] fence counter   KEYS[3] queue list   KEYS[4] waiters hash
  ARGV[1] owner token  ARGV[2] lease ms  ARGV[3] request id
  ARGV[4] mode: 'try' (take it if free and nobody queues), 'queue' (the same, else join the queue
          or refresh this waiter's heartbeat), 'reenter' (count + 1 for an owner that holds it)
  ARGV[5] client id (its channel gets the handoff)  ARGV[6] heartbeat allowance ms
  Returns {1, fence, holdCount, pttl} when ARGV[1] holds the lock (a waiter that was handed the
          lock claims it here, lengthened to its lease);
          {0, pttl} when it must wait; {-1} for 'reenter' when ARGV[1] holds nothing.
]]
local lock, fence_key, queue, waiters = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local owner, lease, req, mode = ARGV[1], tonumber(ARGV[2]), ARGV[3], ARGV[4]
local count = tonumber(redis.call('HGET', lock, owner) or 0)
if count > 0 then
  local log = read_log(lock)
  if seen(log, req) then
    return {1, tonumber(redis.call('HGET', lock, ':fence')), count, redis.call('PTTL', lock)}
  end
  if mode ~= 'reenter' then
    -- A waiter claiming a handoff whose message it missed: the lock is already its own.
    return {1, tonumber(redis.call('HGET', lock, ':fence')), count, lengthen(lock, lease)}
  end
  count = redis.call('HINCRBY', lock, owner, 1)
  remember(lock, log, req)
  return {1, tonumber(redis.call('HGET', lock, ':fence')), count, lengthen(lock, lease)}
end
if mode == 'reenter' then
  return {-1}
end
local now = server_now()
-- Forget dead waiters at the head, so that a crashed waiter never blocks a free lock.
while true do
  local head = redis.call('LINDEX', queue, 0)
  if not head or head == owner then
    break
  end
  local entry = redis.call('HGET', waiters, head)
  if entry and tonumber(string.match(entry, '^(%d+):')) >= now then
    break
  end
  redis.call('LPOP', queue)
  redis.call('HDEL', waiters, head)
end
local head = redis.call('LINDEX', queue, 0)
if redis.call('HEXISTS', lock, ':fence') == 0 and (not head or head == owner) then
  if head then
    redis.call('LPOP', queue)
    redis.call('HDEL', waiters, owner)
  end
  local fence = redis.call('INCR', fence_key)
  redis.call('HSET', lock, owner, 1, ':fence', fence)
  redis.call('PEXPIRE', lock, lease)
  return {1, fence, 1, lease}
end
if mode == 'try' then
  return {0, redis.call('PTTL', lock)}
end
local allowance = tonumber(ARGV[6])
if redis.call('HSET', waiters, owner, (now + allowance) .. ':' .. lease .. ':' .. allowance .. ':' .. ARGV[5]) == 1 then
  redis.call('RPUSH', queue, owner)
end
-- The queue's keys outlive their last live waiter by one allowance at most.
redis.call('PEXPIRE', queue, allowance * 2)
redis.call('PEXPIRE', waiters, allowance * 2)
return {0, redis.call('PTTL', lock)}
