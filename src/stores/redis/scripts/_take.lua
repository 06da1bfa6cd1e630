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
-- queue if it was in it (`place`: its place there, see _queue.lua; nil for a first try, which is in
-- no queue and is spared the look). `value`: the lock key's value, when the caller has read it
-- already (false: no key); nil to have it read here.
local function take(lock, queue, owner, lease, kind, proposed, client, place, value)
  local state
  if value == nil then
    state = read_lock(lock)
  else
    state = parse_lock(lock, value)
  end
  if state and state.count > 0 then
    if state.owner == owner then
      drop_holder_entry(queue, place)
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
      if waiter.owner == owner then
        -- Its own entry, at the head: taken out here, with no search.
        redis.call('LPOP', queue)
        place = nil
        break
      end
      if kind == 'polite' and waiter.client == client then
        break
      end
      now = now or server_now()
      if waiter.expiry >= now then
        return nil, state
      end
      redis.call('LPOP', queue)
    end
  end
  if place then
    drop_waiter(queue, owner, place)
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
-- lock by a release, or looks again at its next heartbeat. `entry`: the waiter's entry in the queue
-- (its place, see _queue.lua), appended when it was queued.
local function busy(lock, state, behind, entry)
  local pttl = 0
  if not behind then
    pttl = redis.call('PTTL', lock)
  end
  local reply = {0, pttl, '', '', entry}
  if state and state.count > 0 then
    reply[3], reply[4] = state.owner, state.clients
  end
  return reply
end
