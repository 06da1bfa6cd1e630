--[[
  Read a semaphore's state, on the server's clock (writes nothing: leases that ran out are not
  counted, not pruned).
  KEYS[1] meta   KEYS[2] holders   KEYS[3] leases   KEYS[4] queue
  ARGV[1] the limit when none is stored
  Returns {limit, permits held by live holders, live holders, ms until the earliest live lease
  runs out (-2: none), queue length, 1 when the limit is stored (else 0)}.
]]
local now = server_now()
local stored = tonumber(redis.call('HGET', KEYS[1], 'limit'))
local live = redis.call('ZRANGEBYSCORE', KEYS[3], '(' .. now, '+inf', 'WITHSCORES')
local used, holders, earliest = 0, 0, -2
for i = 1, #live, 2 do
  local value = redis.call('HGET', KEYS[2], live[i])
  if value then
    used = used + tonumber(string.match(value, '^(%d+)|') or 0)
    holders = holders + 1
    if earliest == -2 then
      earliest = math.max(1, tonumber(live[i + 1]) - now)
    end
  end
end
return {stored or tonumber(ARGV[1]), used, holders, earliest, redis.call('LLEN', KEYS[4]), stored and 1 or 0}
