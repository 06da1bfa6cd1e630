--[[
  Read a semaphore's state, on the server's clock (writes nothing: leases that ran out are not
  counted, not pruned).
  KEYS[1] meta   KEYS[2] holders   KEYS[3] leases   KEYS[4] queue
  ARGV[1] the limit when none is stored
  [ARGV[2] how many queued waiters to describe, from the queue's head: given (the CLI), the
          holders and queue in detail]
  Returns {limit, permits held by live holders, live holders, ms until the earliest live lease
  runs out (-2: none), queue length, 1 when the limit is stored (else 0), {the creation values
  grants went by while no limit was stored, since meta was made}}.
  With ARGV[2], followed by: now (ms on the server's clock), the last fence handed out (0: none
  known), the PTTLs of meta, holders, leases and queue (-2: absent), {owner, permits,
  count, fence, clients, expiry, ...}: six values per live holder, soonest expiry first, and
  {owner, expiry, leaseMs, allowanceMs, permits, clientId, since, ...}: seven values per described
  waiter (an entry padlock cannot read is given as {entry, 0, 0, 0, 0, '', 0}).
]]
local now = server_now()
local detailed = #ARGV >= 2
local stored = tonumber(redis.call('HGET', KEYS[1], 'limit'))
local live = redis.call('ZRANGEBYSCORE', KEYS[3], '(' .. now, '+inf', 'WITHSCORES')
local used, holders, earliest = 0, 0, -2
local described_holders = {}
for i = 1, #live, 2 do
  local value = redis.call('HGET', KEYS[2], live[i])
  if value then
    used = used + tonumber(string.match(value, '^(%d+)|') or 0)
    holders = holders + 1
    if earliest == -2 then
      earliest = math.max(1, tonumber(live[i + 1]) - now)
    end
    if detailed then
      local h = parse_permit_holder(value)
      for _, v in ipairs({live[i], h.permits, h.count, tonumber(h.fence), h.clients, tonumber(live[i + 1])}) do
        described_holders[#described_holders + 1] = v
      end
    end
  end
end
-- The creation values grants went by while no limit was stored (meta's `permits:<n>` fields).
local seen = {}
for _, field in ipairs(redis.call('HKEYS', KEYS[1])) do
  local n = string.match(field, '^permits:(%d+)$')
  if n then
    seen[#seen + 1] = tonumber(n)
  end
end
local result = {stored or tonumber(ARGV[1]), used, holders, earliest, redis.call('LLEN', KEYS[4]), stored and 1 or 0, seen}
if not detailed then
  return result
end
local meta, queue = KEYS[1], KEYS[4]
for _, value in ipairs({now, tonumber(redis.call('HGET', meta, 'fence') or '0'), redis.call('PTTL', meta), redis.call('PTTL', KEYS[2]), redis.call('PTTL', KEYS[3]), redis.call('PTTL', queue)}) do
  result[#result + 1] = value
end
result[#result + 1] = described_holders
local described = {}
local limit = tonumber(ARGV[2] or 0)
if limit > 0 then
  for _, entry in ipairs(redis.call('LRANGE', queue, 0, limit - 1)) do
    local w = parse_permit_waiter(entry)
    local values = {w.owner, w.expiry, w.lease, w.allowance, w.permits, w.client, tonumber(w.since)}
    for _, value in ipairs(values) do
      described[#described + 1] = value
    end
  end
end
result[#result + 1] = described
return result
