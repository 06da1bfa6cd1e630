--[[
  As acquire.lua, but an owner that must wait joins the queue, or refreshes its place there (a
  heartbeat): the same call that finds the lock held queues its waiter, so no release can slip
  between the two.
  KEYS[1] lock   KEYS[2] queue list
  ARGV[1] owner token  ARGV[2] lease ms  ARGV[3] kind: 'mutex' or 'fair'
  ARGV[4] client id (its channel gets the wake-up or handoff; recorded as the holder's when granted)
  ARGV[5] heartbeat allowance ms (the caller's heartbeat interval × 3: a queued waiter not heard
          from for that long is taken for dead and skipped)
  ARGV[6] where a new entry goes: 'tail', or 'head' (a woken mutex waiter that someone else beat to
          the lock keeps its turn)
  ARGV[7] the fence proposed for a fresh hold (Redlock; 0: none, see _lock.lua)
  ARGV[8] the waiter's ticket (Redlock: ms on its clock when its wait began; 0: none): a waiter with
          a ticket joins in ticket order (its entry's 'since'), whatever ARGV[6] says, so that every
          master orders the same waiters alike and their releases wake the same one; and, unless it
          was just woken (ARGV[6] 'head'), it takes a free lock only when the queue's first live
          waiter is not another client's ('polite', _take.lua): on several masters a newcomer that
          takes the lock another client's woken waiter is taking splits their votes, and both must
          give back and try again
  ARGV[9] the waiter's place in the queue: its entry as its last call returned it; '' when it is in
          no queue (its first join; or woken, its entry taken out); '?' when it does not know (see
          _queue.lua; with a ticket, found by place_in_order)
  Returns {1, fence, holdCount, pttl} when ARGV[1] holds the lock now (a fair waiter handed the
  lock claims it here, lengthened to its lease); {0, pttl, holder, clients} when it waits (queued;
  as in acquire.lua, but pttl 0 when another waiter is queued ahead: see busy() in _take.lua; and
  a fifth value, the waiter's entry: its place for its next call).
]]
local lock, queue, owner, place = KEYS[1], KEYS[2], ARGV[1], ARGV[9]
local ticket = tonumber(ARGV[8]) or 0

-- Queues the owner, or refreshes its entry (its place, as found by then), and tells it to wait
-- behind `state` (the lock's; nil: no key).
local function wait(state)
  local fields = '|' .. ARGV[4] .. '|' .. ARGV[2] .. '|' .. ARGV[5] .. '|' .. ARGV[3] .. '|'
  local join = join_at(queue, ARGV[6])
  if ticket > 0 then
    join = function(entry)
      return join_in_order(queue, entry, ticket, owner)
    end
  end
  local now = server_now()
  local behind, entry = queue_waiter(queue, owner, fields, ticket > 0 and string.format('%.0f', ticket) or now, now, tonumber(ARGV[5]), join, place)
  return busy(lock, state, behind, entry)
end

-- The common case, with the fewest steps: a waiter's first join (no place) behind another owner's
-- hold, which take() below would refuse it whatever its rule. The hold is read for the three
-- fields the reply needs, and the lock left unparsed.
local value = redis.call('GET', lock)
if place == '' and value then
  local holder, count, clients = string.match(value, '^%d+|([^|]*)|(%d+)|([^|]*)|')
  if count and count ~= '0' and holder ~= owner then
    return wait({owner = holder, count = tonumber(count), clients = clients})
  end
end
-- @helpers
-- A waiter that does not know its place (on several masters, each entry differs) is found in a
-- ticket-ordered queue without reading all of it.
if place == '?' and ticket > 0 then
  place = place_in_order(queue, owner, ticket)
end
local rule = ARGV[3]
if ticket > 0 and ARGV[6] ~= 'head' and rule == 'mutex' then
  rule = 'polite'
end
local taken, state = take(lock, queue, owner, tonumber(ARGV[2]), rule, tonumber(ARGV[7]), ARGV[4], place, value)
if taken then
  return taken
end
return wait(state)
