--[[
  Set a semaphore's limit, atomically. Raised: the head waiters that now fit are admitted. Lowered:
  holders keep their permits until they release (no new grant until the permits held fall below
  the limit); waiters asking more than the new limit leave the queue and are woken ("owner wake"),
  so that their next attempt is refused at once rather than wait forever.
  The limit is stored in meta and outlives the semaphore's last use by SEMAPHORE_RETENTION_MS
  (then the creation value applies again).
  KEYS[1] meta   KEYS[2] holders   KEYS[3] leases   KEYS[4] queue
  ARGV[1] the new limit (>= 1)  ARGV[2] waiters' channel prefix
  ARGV[3] 'SPUBLISH' (a Cluster) or 'PUBLISH'
  Returns the permits held by live holders.
]]
local limit = tonumber(ARGV[1])
redis.call('HSET', KEYS[1], 'limit', limit)
local s = open_semaphore(KEYS, limit, ARGV[2], ARGV[3])
-- The stored limit lives as long as the longest lease, and the retention beyond.
local latest = redis.call('ZRANGE', s.leases, -1, -1, 'WITHSCORES')
lengthen(s.meta, SEMAPHORE_RETENTION_MS + (#latest > 0 and (tonumber(latest[2]) - s.now) or 0))
for _, entry in ipairs(redis.call('LRANGE', s.queue, 0, -1)) do
  local w = parse_permit_waiter(entry)
  if w.permits > limit then
    redis.call('LREM', s.queue, 1, entry)
    if w.expiry >= s.now then
      redis.call(s.publish, s.channel .. ':' .. w.client, w.owner .. ' wake ' .. w.expiry)
    end
  end
end
admit_permit_waiters(s, nil)
return s.used
