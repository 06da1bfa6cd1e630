-- The read/write lock's state (docs/protocol.md, "Read/write lock"). Two keys hold it:
-- `state`, a hash: 'fence' (the last fence handed out), 'log' (the request log: " id id … ", newest
-- first, RW_LOG_ENTRIES at most, longer than the mutex's since every reader's calls share it),
-- 'writer' (the write hold's owner, while held) and one field per hold, 'r:<owner>' or 'w:<owner>'
-- → its hold count; `leases`, a sorted set: the same 'r:<owner>' / 'w:<owner>' → the hold's expiry
-- in ms on the server's clock. A hold is held exactly while its expiry is later than `now`: each
-- read hold has a lease of its own, so a crashed reader's hold runs out alone.
-- Queue entries are _queue.lua's, with kind 'read' or 'write'.
local RW_RETENTION_MS = 3600000
local RW_LOG_ENTRIES = 64

-- The request log with `req` added (its newest RW_LOG_ENTRIES ids kept).
local function rw_remember(log, req)
  return string.sub(' ' .. req .. log, 1, (#req + 1) * RW_LOG_ENTRIES + 1)
end

-- Forgets holds whose lease ran out (the sorted set may also have expired whole).
local function rw_prune(state, leases, now)
  local expired = redis.call('ZRANGEBYSCORE', leases, '-inf', now)
  if #expired > 0 then
    redis.call('ZREMRANGEBYSCORE', leases, '-inf', now)
  end
  if redis.call('ZCARD', leases) == 0 then
    for _, field in ipairs(redis.call('HKEYS', state)) do
      if field ~= 'fence' and field ~= 'log' then
        redis.call('HDEL', state, field)
      end
    end
    return
  end
  for _, member in ipairs(expired) do
    redis.call('HDEL', state, member)
  end
  local writer = redis.call('HGET', state, 'writer')
  if writer and redis.call('HEXISTS', state, 'w:' .. writer) == 0 then
    redis.call('HDEL', state, 'writer')
  end
end

-- The member (and hash field) of `owner`'s hold on `side` ('read' or 'write').
local function rw_member(side, owner)
  return (side == 'write' and 'w:' or 'r:') .. owner
end

-- The fence of the holds granted now: a write takes the next one (_lock.lua's next_fence: last + 1,
-- or the server's clock in µs when none is known); a read shares the last one (made from the
-- clock when none is known yet).
local function rw_fence(state, side)
  local last = redis.call('HGET', state, 'fence')
  if side == 'write' or not last then
    last = next_fence(last and {fence = last} or nil, nil)
    redis.call('HSET', state, 'fence', last)
  end
  return last
end

-- Grants `owner` a fresh hold on `side` for `lease` ms; returns its fence.
local function rw_grant(state, leases, side, owner, lease, now)
  local member = rw_member(side, owner)
  local fence = rw_fence(state, side)
  redis.call('HSET', state, member, 1)
  if side == 'write' then
    redis.call('HSET', state, 'writer', owner)
  end
  redis.call('ZADD', leases, now + lease, member)
  return fence
end

-- Takes `member`'s hold away entirely (release to zero, leave, force-release).
local function rw_drop(state, leases, member)
  redis.call('ZREM', leases, member)
  redis.call('HDEL', state, member)
  if string.sub(member, 1, 2) == 'w:' and redis.call('HGET', state, 'writer') == string.sub(member, 3) then
    redis.call('HDEL', state, 'writer')
  end
end

-- Admits queued waiters the lock now allows, in queue order, dropping dead ones (heartbeat run
-- out) on the way: a writer at the head when nobody holds; else every reader at the head up to the
-- first writer, when no writer holds. Each is handed its hold (first lease capped at its heartbeat
-- allowance, as the fair mutex) and told "<owner> <fence> <pttl> <expiry>" (its entry's, as the
-- fair mutex's handoff) on its client's channel, except
-- `self` (the caller, which learns from the reply). Returns whether anyone was admitted.
local function rw_admit(state, leases, queue, now, channel, publish, self)
  local admitted = false
  while true do
    local head = redis.call('LINDEX', queue, 0)
    if not head then
      return admitted
    end
    local waiter = parse_entry(head)
    if waiter.expiry >= now then
      if waiter.kind == 'write' then
        if redis.call('ZCARD', leases) > 0 then
          return admitted
        end
      elseif redis.call('HEXISTS', state, 'writer') == 1 then
        return admitted
      end
    end
    redis.call('LPOP', queue)
    if waiter.expiry >= now then
      local pttl = math.min(waiter.lease, waiter.allowance)
      local fence = rw_grant(state, leases, waiter.kind, waiter.owner, pttl, now)
      if waiter.owner ~= self then
        redis.call(publish, channel .. ':' .. waiter.client, waiter.owner .. ' ' .. fence .. ' ' .. pttl .. ' ' .. waiter.expiry)
      end
      admitted = true
      if waiter.kind == 'write' then
        return admitted
      end
    end
  end
end

-- The longest remaining lease of any hold, in ms (0: none): what a waiter may wait at most.
local function rw_longest(leases, now)
  local last = redis.call('ZRANGE', leases, -1, -1, 'WITHSCORES')
  if last[2] then
    return tonumber(last[2]) - now
  end
  return 0
end

-- Sets the keys' expiry from the holds: the sorted set lives as long as the longest lease, the
-- hash (fence and request log) RW_RETENTION_MS longer, so that the next fence exceeds it and a
-- resent release is recognised.
local function rw_keep(state, leases, now)
  local longest = rw_longest(leases, now)
  if longest > 0 then
    redis.call('PEXPIRE', leases, longest)
  end
  redis.call('PEXPIRE', state, longest + RW_RETENTION_MS)
end
