-- The queue of a lock's waiters: one list of entries, oldest first. An entry is
-- "owner|clientId|leaseMs|allowanceMs|kind|since|expiry" (since, expiry: ms on the server's clock,
-- or since on the waiter's clock when it brings a ticket; kind: the waiter's kind, 'mutex' or 'fair'
-- in a mutex's queue, 'read' or 'write' in a read/write lock's, the permits asked in a semaphore's);
-- a heartbeat rewrites its expiry in place. Nothing else indexes the list: a waiter finds its entry
-- by the text the script that wrote it returned (its "place"), which it sends back with its next
-- call; '' says it is in no queue (a first join, or its entry was taken out when it was woken), and
-- '?' that it does not know (a topology of several servers, where each master's entry differs, or
-- a call abandoned in flight): then the list is searched.

local function parse_entry(entry)
  local owner, client, lease, allowance, kind, since, expiry = string.match(entry, '^([^|]*)|([^|]*)|(%d+)|(%d+)|(%w+)|(%d+)|(%d+)$')
  return {owner = owner, client = client, lease = tonumber(lease), allowance = tonumber(allowance), kind = kind, since = since, expiry = tonumber(expiry)}
end

-- The entries of `owner` in the queue, by a search: {index from 0, text} each, in queue order.
local function entries_of(queue, owner)
  local found = {}
  local prefix = owner .. '|'
  for at, entry in ipairs(redis.call('LRANGE', queue, 0, -1)) do
    if string.sub(entry, 1, #prefix) == prefix then
      found[#found + 1] = {at - 1, entry}
    end
  end
  return found
end

-- Where `owner`'s entry is in the queue, by its place (see above; not ''): its index from 0 and its
-- text, or nil when it is not there.
local function find_waiter(queue, owner, place)
  if place ~= '?' then
    local at = redis.call('LPOS', queue, place)
    if at then
      return at, place
    end
    return nil
  end
  local first = entries_of(queue, owner)[1]
  if first then
    return first[1], first[2]
  end
  return nil
end

-- Takes `owner` out of the queue, if it is in it (`place`: see above). Searching ('?'), it takes out
-- every entry of the owner: one queued twice (a resent first join) leaves nothing behind.
local function drop_waiter(queue, owner, place)
  if place == '' then
    return
  end
  if place ~= '?' then
    redis.call('LREM', queue, 1, place)
    return
  end
  for _, found in ipairs(entries_of(queue, owner)) do
    redis.call('LREM', queue, 1, found[2])
  end
end

-- For an owner found holding what it asks for (a resend, or a waiter claiming a turn it was given):
-- the entry its place names, if it is still queued, goes (it can only be an extra one: its first
-- join resent after a reconnect). A place not written out ('' or '?') is left alone.
local function drop_holder_entry(queue, place)
  if place and place ~= '?' then
    drop_waiter(queue, nil, place)
  end
end

-- The owner and the ticket (`since`, as a number) of a queue entry, read without the other fields;
-- nil for an entry padlock did not write.
local function order_of(entry)
  local owner, since = string.match(entry, '^([^|]*)|[^|]*|%d+|%d+|%w+|(%d+)|')
  return owner, tonumber(since)
end

-- Whether a waiter (owner `a`, ticket `a_since`) goes ahead of another (`b`, `b_since`): in ticket
-- order, ties broken by owner token.
local function precedes(a, a_since, b, b_since)
  return a_since < b_since or (a_since == b_since and a < b)
end

-- Whether `entry` goes ahead of a waiter with ticket `since` and owner `owner`.
local function ahead_of(entry, since, owner)
  local other, other_since = order_of(entry)
  return precedes(other, other_since, owner, since)
end

-- `owner`'s place (see above) in a queue kept in ticket order (Redlock's: join_in_order), its ticket
-- being `since`: its entry; '' when it is not there; '?' when it is there twice (a resent first
-- join: the search takes out both) or an entry cannot be read. Reads from the head only as far as
-- the first entry that goes after it, a few at a time: a woken head, whose entry the release took
-- out, costs one read of one entry, where a search reads the whole queue.
local function place_in_order(queue, owner, since)
  local prefix = owner .. '|'
  local found
  local from, size = 0, 1
  while true do
    local entries = redis.call('LRANGE', queue, from, from + size - 1)
    for _, entry in ipairs(entries) do
      if string.sub(entry, 1, #prefix) == prefix then
        if found then
          return '?'
        end
        found = entry
      else
        local other, other_since = order_of(entry)
        if not other then
          return '?'
        end
        if not precedes(other, other_since, owner, since) then
          return found or ''
        end
      end
    end
    if #entries < size then
      return found or ''
    end
    from, size = from + size, size * 4
  end
end

-- Adds `entry` (of `owner`, ticket `since`) in ticket order, ties broken by owner: every server that
-- orders waiters so (Redlock's masters) wakes the same one first. Returns the queue's length, and
-- whether another waiter is ahead of the entry.
local function join_in_order(queue, entry, since, owner)
  local tail = redis.call('LINDEX', queue, -1)
  if not tail or ahead_of(tail, since, owner) then
    local length = redis.call('RPUSH', queue, entry)
    return length, length > 1
  end
  for at, other in ipairs(redis.call('LRANGE', queue, 0, -1)) do
    if not ahead_of(other, since, owner) then
      return redis.call('LINSERT', queue, 'BEFORE', other, entry), at > 1
    end
  end
  local length = redis.call('RPUSH', queue, entry)
  return length, length > 1
end

-- Queues `owner` with the entry "owner<fields>since|expiry" (`fields`: "|client|lease|allowance|kind|"),
-- `join(entry)` putting it where the caller's order wants it (and returning the list's length); or,
-- when it is queued already (a heartbeat: `place` finds it), gives its entry the new expiry in
-- place, keeping its `since`. The queue outlives its last live waiter by one to three allowances:
-- its expiry is set when the list is made, and a heartbeat lengthens it whenever it would end
-- sooner than two of that waiter's allowances; never shortened, so a waiter with a short allowance
-- never cuts short the entries of waiters with longer ones. A join into a list that exists already
-- leaves its expiry alone (one command less per contended acquisition): the list lives at least
-- 5/3 of an allowance past the last heartbeat of any waiter in it, which covers a newcomer's first
-- heartbeat unless its allowance is over five times theirs and they all leave first (then its
-- entry goes with the list, and its first heartbeat joins it again: see docs/protocol.md).
-- Returns whether another waiter is surely ahead of `owner` in the queue (false: it is the head,
-- or its place is not known without another command), and its entry (its place from now on).
local function queue_waiter(queue, owner, fields, since, now, allowance, join, place)
  local at, old
  if place ~= '' then
    at, old = find_waiter(queue, owner, place)
  end
  local entry, length, ahead
  if at then
    entry = owner .. fields .. parse_entry(old).since .. '|' .. (now + allowance)
    redis.call('LSET', queue, at, entry)
    ahead = at > 0
  else
    entry = owner .. fields .. since .. '|' .. (now + allowance)
    length, ahead = join(entry)
  end
  if length == 1 or (at and redis.call('PTTL', queue) < allowance * 2) then
    redis.call('PEXPIRE', queue, allowance * 3)
  end
  return ahead, entry
end

-- A `join` for queue_waiter: a new entry goes to the head ('head': a waiter that keeps its turn) or
-- to the tail. Returns the queue's length, and whether another waiter is ahead of the entry.
local function join_at(queue, place)
  return function(entry)
    if place == 'head' then
      return redis.call('LPUSH', queue, entry), false
    end
    local length = redis.call('RPUSH', queue, entry)
    return length, length > 1
  end
end

-- The first `limit` entries of the queue, seven values each, flat (for inspect scripts): owner,
-- expiry, lease, allowance, kind, client, since; an unreadable entry reads as the raw entry and
-- zeros (a dead waiter).
local function describe_waiters(queue, limit)
  local described = {}
  if limit > 0 then
    for _, entry in ipairs(redis.call('LRANGE', queue, 0, limit - 1)) do
      local w = parse_entry(entry)
      local values = {entry, 0, 0, 0, '', '', 0}
      if w.expiry then
        values = {w.owner, w.expiry, w.lease, w.allowance, w.kind, w.client, tonumber(w.since)}
      end
      for _, value in ipairs(values) do
        described[#described + 1] = value
      end
    end
  end
  return described
end
