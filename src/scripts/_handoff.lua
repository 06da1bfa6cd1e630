-- Gives a free lock's turn to the first live waiter of the queue, skipping (and forgetting) waiters
-- whose heartbeat ran out; that waiter leaves the queue. A waiter entry is
-- "expiry:leaseMs:allowanceMs:kind:clientId" (server ms). With no live waiter: false.
-- A fair waiter is handed the lock: new fence, first lease capped at its heartbeat allowance (so a
-- waiter that died just before its turn blocks the queue no longer than that; the live one
-- lengthens it within a third of it), and "owner fence pttl" published on its client's channel; returns true.
-- A mutex waiter is only woken ("owner wake"): the lock stays free, anyone may take it (the woken
-- waiter, beaten to it, rejoins at the head with enqueue.lua's 'head'); false.
-- `publish` is 'SPUBLISH' on a Cluster (the message stays on the slot's shard), else 'PUBLISH'.
local function hand_off(lock, fence_key, queue, waiters, channel, publish)
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
          redis.call(publish, channel .. ':' .. client, head .. ' wake')
          return false
        end
        local fence, text = next_fence(fence_key)
        local pttl = math.min(tonumber(lease), tonumber(allowance))
        redis.call('HSET', lock, head, 1, ':fence', text)
        redis.call('PEXPIRE', lock, pttl)
        redis.call(publish, channel .. ':' .. client, head .. ' ' .. text .. ' ' .. pttl)
        return true
      end
    end
  end
end

-- Frees a lock whose last hold is gone (its owner and ':fence' fields already deleted): hands it
-- to, or wakes, the queue's first live waiter; unless handed over, leaves a tombstone (the request
-- log, if the hash still has one) and announces the release on the lock's channel.
local function free_lock(lock, fence_key, queue, waiters, channel, tombstone, publish)
  if hand_off(lock, fence_key, queue, waiters, channel, publish) then
    return
  end
  redis.call('PEXPIRE', lock, tombstone)
  redis.call(publish, channel, 'released')
end

-- The publish command a caller asked for: only these two are ever run.
local function publish_command(name)
  if name == 'SPUBLISH' then
    return 'SPUBLISH'
  end
  return 'PUBLISH'
end
