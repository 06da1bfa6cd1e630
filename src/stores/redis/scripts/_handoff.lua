-- Wakes a mutex waiter: "owner wake expiry" on its client's channel (expiry: its entry's, as the
-- queue held it), so that the waiter knows which of its entries was taken out.
local function wake(channel, publish, owner, client, expiry)
  redis.call(publish, channel .. ':' .. client, owner .. ' wake ' .. expiry)
end

-- A release's common contended case, without parsing the whole entry: `entry`, the queue's head
-- just popped, is a live mutex waiter other than `freed_by` (the releasing owner), and is woken
-- (see hand_off); true. false (nothing sent) for any other head: a fair waiter, to be handed the
-- lock; a dead one, to be skipped; the releaser's own; an entry padlock did not write.
local function wake_mutex_head(entry, freed_by, channel, publish)
  local owner, client, kind, expiry = string.match(entry, '^([^|]*)|([^|]*)|%d+|%d+|(%w+)|%d+|(%d+)$')
  if not kind or kind == 'fair' or owner == freed_by or tonumber(expiry) < server_now() then
    return false
  end
  wake(channel, publish, owner, client, expiry)
  return true
end

-- Gives a free lock's turn to the first live waiter of the queue, skipping (and forgetting) waiters
-- whose heartbeat ran out, and any entry of the owner who just freed it (left by a heartbeat that
-- crossed its wake-up); that waiter leaves the queue. `state` is the lock's (nil: no key).
-- A fair waiter is handed the lock: next fence, first lease capped at its heartbeat allowance (so
-- a waiter that died just before its turn blocks the queue no longer than that; the live one
-- lengthens it within a third of it), its client recorded as the holder's, and "owner fence pttl
-- expiry" published on its client's channel (expiry: its entry's, as in a wake-up); returns true.
-- A mutex waiter is only woken ("owner wake expiry", the expiry of the entry taken out: the waiter
-- that finds it is its latest knows it is in no queue now): the lock stays free, anyone may take it
-- (the woken waiter, beaten to it, rejoins at the head with enqueue.lua's 'head'); false. So is no
-- waiter.
-- `publish` is 'SPUBLISH' on a Cluster (the message stays on the slot's shard), else 'PUBLISH'.
-- `first`: the queue's head, when the caller has popped it already (nil: none popped).
local function hand_off(lock, state, queue, channel, publish, first)
  local now
  local freed_by = state and state.owner or ''
  local head = first
  while true do
    if not head then
      head = redis.call('LPOP', queue)
      if not head then
        return false
      end
    end
    local waiter = parse_entry(head)
    now = now or server_now()
    if waiter.expiry >= now and waiter.owner ~= freed_by then
      if waiter.kind ~= 'fair' then
        wake(channel, publish, waiter.owner, waiter.client, waiter.expiry)
        return false
      end
      local fence = next_fence(state, nil)
      local pttl = math.min(waiter.lease, waiter.allowance)
      write_lock(lock, {fence = fence, owner = waiter.owner, count = 1, clients = waiter.client, log = state and state.log or ' '}, pttl)
      redis.call(publish, channel .. ':' .. waiter.client, waiter.owner .. ' ' .. fence .. ' ' .. pttl .. ' ' .. waiter.expiry)
      return true
    end
    head = nil
  end
end

-- Frees a lock whose last hold is gone: hands it to, or wakes, the queue's first live waiter;
-- unless handed over, leaves the tombstone (fence and request log kept). `first`: as hand_off's.
local function free_lock(lock, state, queue, channel, publish, first)
  if not hand_off(lock, state, queue, channel, publish, first) then
    tombstone(lock, state)
  end
end

-- The publish command a caller asked for: only these two are ever run.
local function publish_command(name)
  if name == 'SPUBLISH' then
    return 'SPUBLISH'
  end
  return 'PUBLISH'
end
