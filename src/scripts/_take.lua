-- Takes the lock for a fresh owner if it may: returns {1, fence, holdCount, pttl}, or nil when the
-- owner must wait. An owner found holding already is a resend, or a fair waiter claiming a handoff
-- whose message it missed: its state is returned, the lease lengthened to `lease`. A 'fair' owner
-- takes a free lock only when no live waiter is queued ahead of it (dead ones at the head are
-- dropped on the way, so a crashed waiter never blocks a free lock); a 'mutex' owner takes a free
-- lock whoever is queued (barging). A fresh hold gets the next fence (`proposed`: see next_fence)
-- and exactly its lease.
local function take(lock, fence_key, queue, waiters, owner, lease, kind, proposed)
  local count = tonumber(redis.call('HGET', lock, owner) or 0)
  if count > 0 then
    return {1, tonumber(redis.call('HGET', lock, ':fence')), count, lengthen(lock, lease)}
  end
  if redis.call('HEXISTS', lock, ':fence') == 1 then
    return nil
  end
  if kind == 'fair' then
    local now = server_now()
    while true do
      local head = redis.call('LINDEX', queue, 0)
      if not head or head == owner then
        break
      end
      local entry = redis.call('HGET', waiters, head)
      if entry and tonumber(string.match(entry, '^(%d+):')) >= now then
        return nil
      end
      redis.call('LPOP', queue)
      redis.call('HDEL', waiters, head)
    end
  end
  if redis.call('HDEL', waiters, owner) == 1 then
    redis.call('LREM', queue, 1, owner)
  end
  local fence, text = next_fence(fence_key, proposed)
  redis.call('HSET', lock, owner, 1, ':fence', text)
  redis.call('PEXPIRE', lock, lease)
  return {1, fence, 1, lease}
end
