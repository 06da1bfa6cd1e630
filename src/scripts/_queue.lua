-- The queue of a lock's waiters: a list of entries, oldest first, and a hash owner → its entry (to
-- find it: idempotent joins, heartbeats, leaving). An entry is
-- "owner|clientId|leaseMs|allowanceMs|kind|since|expiry" (since, expiry: ms on the server's clock,
-- or since on the waiter's clock when it brings a ticket; kind 'mutex' or 'fair'); a heartbeat
-- rewrites its expiry in place.

local function parse_entry(entry)
  local owner, client, lease, allowance, kind, since, expiry = string.match(entry, '^([^|]*)|([^|]*)|(%d+)|(%d+)|(%a+)|(%d+)|(%d+)$')
  return {owner = owner, client = client, lease = tonumber(lease), allowance = tonumber(allowance), kind = kind, since = since, expiry = tonumber(expiry)}
end

-- Takes `owner` out of the queue, if it is in it.
local function drop_waiter(queue, waiters, owner)
  local entry = redis.call('HGET', waiters, owner)
  if entry then
    redis.call('LREM', queue, 1, entry)
    redis.call('HDEL', waiters, owner)
  end
end

-- Whether `waiter` goes ahead of a waiter with ticket `since` and owner `owner`.
local function ahead_of(waiter, since, owner)
  local other = tonumber(waiter.since)
  return other < since or (other == since and waiter.owner < owner)
end

-- Adds `entry` (of `owner`, ticket `since`) in ticket order, ties broken by owner: every server that
-- orders waiters so (Redlock's masters) wakes the same one first. Returns the queue's length.
local function join_in_order(queue, entry, since, owner)
  local tail = redis.call('LINDEX', queue, -1)
  if not tail or ahead_of(parse_entry(tail), since, owner) then
    return redis.call('RPUSH', queue, entry)
  end
  for _, other in ipairs(redis.call('LRANGE', queue, 0, -1)) do
    if not ahead_of(parse_entry(other), since, owner) then
      return redis.call('LINSERT', queue, 'BEFORE', other, entry)
    end
  end
  return redis.call('RPUSH', queue, entry)
end
