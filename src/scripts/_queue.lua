-- The queue of a lock's waiters: a list of entries, oldest first, and a hash owner → its entry (to
-- find it: idempotent joins, heartbeats, leaving). An entry is
-- "owner|clientId|leaseMs|allowanceMs|kind|since|expiry" (since, expiry: ms on the server's clock;
-- kind 'mutex' or 'fair'); a heartbeat rewrites its expiry in place.

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
