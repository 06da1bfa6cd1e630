--[[
  Acquire, queue for, or re-enter a mutex or fair mutex, with its fence, in one round trip.
  KEYS[1] lock hash   KEYS[2] fence counter   KEYS[3] queue list   KEYS[4] waiters hash
  ARGV[1] owner token  ARGV[2] lease ms  ARGV[3] request id
  ARGV[4] mode: 'try' (take it if free), 'queue' (the same, else join the queue at its tail or
          refresh this waiter's heartbeat), 'requeue' (as 'queue', but a waiter woken for a lock
          that someone else took first goes back to the head), 'reenter' (count + 1 for an owner
          that holds it)
  ARGV[5] client id (its channel gets the wake-up or handoff)
  ARGV[6] heartbeat allowance ms (the caller's heartbeat interval × 3: a queued waiter not heard
          from for that long is taken for dead and skipped)
  ARGV[7] kind: 'fair' (a free lock goes to the queue's first live waiter; releases hand over)
          or 'mutex' (anyone may take a free lock; releases wake one queued waiter)
  Returns {1, fence, holdCount, pttl} when ARGV[1] holds the lock now (a resent attempt, or a
          waiter handed the lock, finds it here, lengthened to at least its lease); {0, pttl} when
          it must wait (pttl: the lock key's PTTL, the holder's remaining lease; for a fair lock
          that is free but has a live waiter ahead, -2 or a tombstone's); {-1} for 'reenter' when
          ARGV[1] holds nothing.
  A fresh hold takes the next fence and exactly its lease; a re-entry keeps the fence and never
  shortens the lease. Re-entries are recorded in the request log; a fresh attempt needs no entry
  (its owner token is new, so finding that owner holding means a resend or a handoff).
]]
local lock, fence_key, queue, waiters = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local owner, lease, req, mode = ARGV[1], tonumber(ARGV[2]), ARGV[3], ARGV[4]
local count = tonumber(redis.call('HGET', lock, owner) or 0)
if count > 0 then
  if mode ~= 'reenter' then
    return {1, tonumber(redis.call('HGET', lock, ':fence')), count, lengthen(lock, lease)}
  end
  local log = read_log(lock)
  if seen(log, req) then
    return {1, tonumber(redis.call('HGET', lock, ':fence')), count, redis.call('PTTL', lock)}
  end
  count = redis.call('HINCRBY', lock, owner, 1)
  remember(lock, log, req)
  return {1, tonumber(redis.call('HGET', lock, ':fence')), count, lengthen(lock, lease)}
end
if mode == 'reenter' then
  return {-1}
end
local free = redis.call('HEXISTS', lock, ':fence') == 0
if free and ARGV[7] == 'fair' then
  -- Fair: only when nobody live is ahead. Dead waiters at the head are forgotten on the way,
  -- so a crashed waiter never blocks a free lock.
  local now = server_now()
  while true do
    local head = redis.call('LINDEX', queue, 0)
    if not head or head == owner then
      break
    end
    local entry = redis.call('HGET', waiters, head)
    if entry and tonumber(string.match(entry, '^(%d+):')) >= now then
      free = false
      break
    end
    redis.call('LPOP', queue)
    redis.call('HDEL', waiters, head)
  end
end
if free then
  if redis.call('HDEL', waiters, owner) == 1 then
    redis.call('LREM', queue, 1, owner)
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
local entry = (server_now() + allowance) .. ':' .. lease .. ':' .. allowance .. ':' .. ARGV[7] .. ':' .. ARGV[5]
if redis.call('HSET', waiters, owner, entry) == 1 then
  if mode == 'requeue' then
    redis.call('LPUSH', queue, owner)
  else
    redis.call('RPUSH', queue, owner)
  end
end
-- Both queue keys expire two of this caller's allowances from now: one allowance after the entry
-- just written would lapse. A caller with a shorter allowance than others' shortens it for all.
redis.call('PEXPIRE', queue, allowance * 2)
redis.call('PEXPIRE', waiters, allowance * 2)
return {0, redis.call('PTTL', lock)}
