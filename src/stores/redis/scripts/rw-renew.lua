--[[
  Read/write lock: renew many holds in one call (the watchdog's batch, reads and writes of any
  number of locks in one Cluster slot), or extend one. Each lock's expired holds are forgotten on
  the way; a hold still held is lengthened, never shortened, and only its own lease moves.
  KEYS[2i-1] state hash and KEYS[2i] leases sorted set of hold i
  ARGV[2i-1] member of hold i ('r:<owner>' or 'w:<owner>')   ARGV[2i] lease ms for hold i
  Returns a list: for each hold, its remaining lease in ms, or 0 when it is not held.
]]
local result = {}
local now = server_now()
for i = 1, #KEYS / 2 do
  local state, leases, member = KEYS[2 * i - 1], KEYS[2 * i], ARGV[2 * i - 1]
  rw_prune(state, leases, now)
  local expiry = redis.call('ZSCORE', leases, member)
  if expiry then
    expiry = math.max(tonumber(expiry), now + tonumber(ARGV[2 * i]))
    redis.call('ZADD', leases, expiry, member)
    rw_keep(state, leases, now)
    result[i] = expiry - now
  else
    result[i] = 0
  end
end
return result
