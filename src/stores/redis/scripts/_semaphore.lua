-- A semaphore's state (docs/protocol.md, "Semaphore"). Its scripts take these keys, in this order:
--   meta     hash: `limit` (set by setPermits; absent: the caller's default, the creation value),
--            `fence` (the last fence given), `permits:<n>` (1: a grant went by the creation value n
--            while no limit was stored), `log` (request ids of recent final releases: those
--            that removed their holder, whose own log went with it)
--   holders  hash: owner → "permits|count|fence|clients|log" (count: its holds; clients: comma-
--            separated ids of the Padlocks that took or re-entered it, as the mutex's; log: the
--            request ids of its own re-entries and partial releases, as the mutex's); and `#used`, the
--            permits they hold together (no owner token contains '#'), kept by every change so
--            that no script reads every holder; absent when 0
--   leases   sorted set: owner → its lease's expiry, ms on the server's clock
--   queue    list of waiters, oldest first: "owner|clientId|leaseMs|allowanceMs|permits|since|expiry"
--            (_queue.lua)
-- The leases set is the truth: a holder counts while its expiry is in the future; every script first
-- prunes the leases that ran out (their holders died), so their permits return by themselves.
-- holders and leases live as long as their longest lease; meta SEMAPHORE_RETENTION_MS longer (the
-- fence, the stored limit and the log outlive the last hold by that much).
local SEMAPHORE_RETENTION_MS = 3600000
local SEMAPHORE_LOG_ENTRIES = 64
local HOLDER_LOG_ENTRIES = 16
local PERMITS_USED = '#used'

-- A holder's entry as a table.
local function parse_permit_holder(value)
  local permits, count, fence, clients, log = string.match(value, '^(%d+)|(%d+)|(%d+)|([^|]*)|(.*)$')
  if not permits then
    error({err = 'WRONGTYPE a semaphore holder entry holds a value padlock did not write'})
  end
  return {permits = tonumber(permits), count = tonumber(count), fence = fence, clients = clients, log = log}
end

local function write_permit_holder(s, owner, h)
  redis.call('HSET', s.holders, owner, h.permits .. '|' .. h.count .. '|' .. h.fence .. '|' .. h.clients .. '|' .. h.log)
end

-- A waiter's entry as a table; an unreadable one reads as a dead waiter (expiry 0).
local function parse_permit_waiter(entry)
  local w = parse_entry(entry)
  if not w.owner then
    return {owner = entry, client = '', lease = 0, allowance = 0, permits = 0, since = '0', expiry = 0}
  end
  w.permits = tonumber(w.kind)
  return w
end

-- Adds `delta` to the permits held (`#used`, dropped at 0 so that an empty holders hash is deleted).
local function add_permits_used(s, delta)
  if delta == 0 then
    return
  end
  local used = redis.call('HINCRBY', s.holders, PERMITS_USED, delta)
  if used <= 0 then
    redis.call('HDEL', s.holders, PERMITS_USED)
    used = 0
  end
  s.used = used
end

-- Opens the semaphore of `keys` (KEYS[1..4]): reads the clock and the limit, prunes the leases that
-- ran out, and counts the permits the live holders hold. `publish`: 'SPUBLISH' on a Cluster.
local function open_semaphore(keys, default_limit, channel, publish)
  local s = {meta = keys[1], holders = keys[2], leases = keys[3], queue = keys[4], channel = channel, publish = publish_command(publish)}
  s.now = server_now()
  s.stored = tonumber(redis.call('HGET', s.meta, 'limit'))
  s.default = default_limit
  s.limit = s.stored or default_limit
  s.used = tonumber(redis.call('HGET', s.holders, PERMITS_USED)) or 0
  local dead = redis.call('ZRANGEBYSCORE', s.leases, '-inf', s.now)
  if #dead > 0 then
    local freed = 0
    -- One HDEL per holder: unpack() of thousands of owners would overflow Lua's stack.
    for _, owner in ipairs(dead) do
      local value = redis.call('HGET', s.holders, owner)
      if value then
        freed = freed + parse_permit_holder(value).permits
        redis.call('HDEL', s.holders, owner)
      end
    end
    redis.call('ZREMRANGEBYSCORE', s.leases, '-inf', s.now)
    add_permits_used(s, -freed)
  end
  return s
end

-- The holder entry of `owner`, or nil.
local function permit_holder(s, owner)
  local value = redis.call('HGET', s.holders, owner)
  return value and parse_permit_holder(value) or nil
end

-- Keeps holders and leases alive at least `ms` more, meta SEMAPHORE_RETENTION_MS beyond (never shortened).
local function keep_semaphore(s, ms)
  lengthen(s.holders, ms)
  lengthen(s.leases, ms)
  lengthen(s.meta, ms + SEMAPHORE_RETENTION_MS)
end

-- Makes `owner`'s lease last at least `ms` from now (never shorter); returns its remaining ms.
local function lengthen_permit_lease(s, owner, ms)
  local expiry = tonumber(redis.call('ZSCORE', s.leases, owner)) or 0
  local target = math.max(expiry, s.now + ms)
  redis.call('ZADD', s.leases, target, owner)
  keep_semaphore(s, target - s.now)
  return target - s.now
end

-- A fresh hold of `permits` for `owner` of client `client`, lasting `ms`: the next fence (last + 1,
-- or the server's clock in µs when none is known, as the mutex's). Returns the fence as text.
local function new_permit_hold(s, owner, permits, client, ms)
  local last = redis.call('HGET', s.meta, 'fence')
  local fence = next_fence(last and {fence = last} or nil, nil)
  if s.stored then
    redis.call('HSET', s.meta, 'fence', fence)
  else
    -- The limit this grant went by, the caller's creation value: each one seen is recorded (until
    -- meta expires), so that a client whose code passes another learns of the disagreement.
    redis.call('HSET', s.meta, 'fence', fence, 'permits:' .. s.default, 1)
  end
  write_permit_holder(s, owner, {permits = permits, count = 1, fence = fence, clients = client, log = ' '})
  redis.call('ZADD', s.leases, s.now + ms, owner)
  add_permits_used(s, permits)
  keep_semaphore(s, ms)
  return fence
end

-- Removes `owner`'s hold; its permits return.
local function drop_permit_hold(s, owner, h)
  redis.call('HDEL', s.holders, owner)
  redis.call('ZREM', s.leases, owner)
  add_permits_used(s, -h.permits)
end

-- Admits the queue's head waiters while they fit, in order (a head that does not fit stops the
-- queue: nobody behind it overtakes it). Each is handed its permits here (first lease capped at its
-- heartbeat allowance, as the fair mutex's handoff) and told "owner fence pttl expiry" on its
-- client's channel (expiry: its entry's, as the fair mutex's). Dead waiters are dropped; a waiter
-- asking more than the limit is dropped and woken ("owner wake expiry": its next attempt is refused). Stops at `self` when it fits, without granting it
-- (the caller does): returns true then, else false.
local function admit_permit_waiters(s, self)
  while true do
    local head = redis.call('LINDEX', s.queue, 0)
    if not head then
      return false
    end
    local w = parse_permit_waiter(head)
    if w.expiry < s.now or w.permits > s.limit then
      redis.call('LPOP', s.queue)
      if w.expiry >= s.now and w.owner ~= self then
        redis.call(s.publish, s.channel .. ':' .. w.client, w.owner .. ' wake ' .. w.expiry)
      end
    elseif w.permits > s.limit - s.used then
      return false
    elseif w.owner == self then
      return true
    else
      redis.call('LPOP', s.queue)
      local pttl = math.min(w.lease, w.allowance)
      local fence = new_permit_hold(s, w.owner, w.permits, w.client, pttl)
      redis.call(s.publish, s.channel .. ':' .. w.client, w.owner .. ' ' .. fence .. ' ' .. pttl .. ' ' .. w.expiry)
    end
  end
end

-- Ms until the earliest live lease runs out (when permits return by themselves); -2 when none.
local function earliest_permit_expiry(s)
  local first = redis.call('ZRANGE', s.leases, 0, 0, 'WITHSCORES')
  if #first == 0 then
    return -2
  end
  return math.max(1, tonumber(first[2]) - s.now)
end

-- Whether request `req` is in `log` (" id id … ").
local function logged(log, req)
  return string.find(log, ' ' .. req .. ' ', 1, true) ~= nil
end

-- `log` with `req` added, the newest `entries` kept.
local function with_request(log, req, entries)
  return string.sub(' ' .. req .. log, 1, (#req + 1) * entries + 1)
end

-- Whether request `req` of a re-entry or release was applied already (a resend): in the holder's
-- own log (`h`: its entry, nil when gone), or in meta's log of final releases (also returned, as read).
local function permit_request_seen(s, h, req)
  if h and logged(h.log, req) then
    return true, nil
  end
  local log = redis.call('HGET', s.meta, 'log') or ' '
  return logged(log, req), log
end

-- Records a final release (its holder, and its log, are gone) in meta's `log`.
local function remember_final_release(s, log, req)
  redis.call('HSET', s.meta, 'log', with_request(log, req, SEMAPHORE_LOG_ENTRIES))
  lengthen(s.meta, SEMAPHORE_RETENTION_MS)
end
