-- Takes the lock for a fresh owner of client `client` if it may: returns {1, fence, holdCount,
-- pttl}, or nil and the lock's state (nil: no key) when the owner must wait. An owner found
-- holding already is a resend, or a fair waiter claiming a handoff whose message it missed: its
-- state is returned, the lease lengthened to `lease`. A 'fair' owner takes a free lock only when no
-- live waiter is queued ahead of it (dead ones at the head are dropped on the way, so a crashed
-- waiter never blocks a free lock); a 'polite' one only when the queue's first live waiter is not
-- another client's (a waiter of its own client it may pass: their attempts leave on the same
-- connections, so every server sees them in the same order and they cannot split a vote); a
-- 'mutex' owner takes a free lock whoever is queued (barging). A fresh hold gets the next fence
-- (`proposed`: see next_fence) and exactly its lease, and records its client; the owner leaves the
-- queue if it was in it (`queued`: whether it may be; a first try never is, and is spared the look).
local function take(lock, queue, waiters, owner, lease, kind, proposed, client, queued)
  local state = read_lock(lock)
  if state and state.count > 0 then
    if state.owner == owner then
      return {1, tonumber(state.fence), state.count, lengthen(lock, lease)}
    end
    return nil, state
  end
  if kind == 'fair' or kind == 'polite' then
    local now
    while true do
      local head = redis.call('LINDEX', queue, 0)
      if not head then
        break
      end
      local waiter = parse_entry(head)
      if waiter.owner == owner or (kind == 'polite' and waiter.client == client) then
        break
      end
      now = now or server_now()
      if waiter.expiry >= now then
        return nil, state
      end
      redis.call('LPOP', queue)
      redis.call('HDEL', waiters, waiter.owner)
    end
  end
  if queued then
    drop_waiter(queue, waiters, owner)
  end
  local fence = next_fence(state, proposed)
  write_lock(lock, {fence = fence, owner = owner, count = 1, clients = client, log = state and state.log or ' '}, lease)
  return {1, tonumber(fence), 1, lease}
end

-- The reply to an owner that must wait: {0, pttl, holder, clients}, where pttl is the lock key's
-- PTTL (the holder's remaining lease, which bounds the waiter's fallback timer), holder and clients
-- the current hold's owner and clients fields ('' and '' when nobody holds it: a fair lock that is
-- free with a live waiter ahead), so that a waiter can check the holder's liveness (reap.lua).
-- `behind`: another waiter is queued ahead of this one, and pttl is 0 (not asked): the holder's
-- lease ending frees the lock for the waiter ahead, not for this one, which is woken or handed the
-- lock by a release, or looks again at its next heartbeat.
local function busy(lock, state, behind)
  local pttl = 0
  if not behind then
    pttl = redis.call('PTTL', lock)
  end
  if state and state.count > 0 then
    return {0, pttl, state.owner, state.clients}
  end
  return {0, pttl, '', ''}
end
