-- Shared helpers, inserted by the build after each script's header.

-- A request id is remembered in the lock hash's ':log' field (the newest 16), so that a script the
-- client resends after a reconnect is recognised and not applied twice.
local LOG_ENTRIES = 16
local function read_log(key)
  return redis.call('HGET', key, ':log') or ' '
end
local function seen(log, req)
  return string.find(log, ' ' .. req .. ' ', 1, true) ~= nil
end
local function remember(key, log, req)
  redis.call('HSET', key, ':log', string.sub(' ' .. req .. log, 1, (#req + 1) * LOG_ENTRIES + 1))
end

-- Makes the key live at least ms more (never shortens it); returns its remaining lease.
local function lengthen(key, ms)
  local pttl = redis.call('PTTL', key)
  if pttl < ms then
    redis.call('PEXPIRE', key, ms)
    return ms
  end
  return pttl
end

-- Milliseconds on the Redis server's clock (never a client's).
local function server_now()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end

-- Gives a free lock's turn to the first live waiter of the queue, skipping (and forgetting) waiters
-- whose heartbeat ran out; that waiter leaves the queue. A waiter entry is
-- "expiry:leaseMs:allowanceMs:kind:clientId" (server ms). With no live waiter: false.
-- A fair waiter is handed the lock: new fence, first lease capped at its heartbeat allowance (so a
-- waiter that died just before its turn blocks the queue no longer than that; the live one
-- lengthens it within a third of it), and "owner fence pttl" published on its client's channel; returns true.
-- A mutex waiter is only woken ("owner wake"): the lock stays free, anyone may take it (the woken
-- waiter, beaten to it, rejoins at the head with 'requeue'); false.
local function hand_off(lock, fence_key, queue, waiters, channel)
  local now
  while true do
    local head = redis.call('LPOP', queue)
    if not head then
      return false
    end
    now = now or server_now()
    local entry = redis.call('HGET', waiters, head)
    redis.call('HDEL', waiters, head)
    if entry then
      local expiry, lease, allowance, kind, client = string.match(entry, '^(%d+):(%d+):(%d+):(%a+):(.+)$')
      if tonumber(expiry) >= now then
        if kind ~= 'fair' then
          redis.call('PUBLISH', channel .. ':' .. client, head .. ' wake')
          return false
        end
        local fence = redis.call('INCR', fence_key)
        local pttl = math.min(tonumber(lease), tonumber(allowance))
        redis.call('HSET', lock, head, 1, ':fence', fence)
        redis.call('PEXPIRE', lock, pttl)
        redis.call('PUBLISH', channel .. ':' .. client, head .. ' ' .. fence .. ' ' .. pttl)
        return true
      end
    end
  end
end

-- Frees a lock whose last hold is gone (its owner and ':fence' fields already deleted): hands it
-- to, or wakes, the queue's first live waiter; unless handed over, leaves a tombstone (the request
-- log, if the hash still has one) and announces the release on the lock's channel.
local function free_lock(lock, fence_key, queue, waiters, channel, tombstone)
  if hand_off(lock, fence_key, queue, waiters, channel) then
    return
  end
  redis.call('PEXPIRE', lock, tombstone)
  redis.call('PUBLISH', channel, 'released')
end
