--[[
  How many of the given clients are alive: their liveness keys exist. Where the keys do not share
  the lock's server (a Cluster), the reaper asks this first, one call per key's slot.
  KEYS[1..] liveness keys (P:client:<clientId>), all in one slot
  Returns the number of them that exist.
]]
return redis.call('EXISTS', unpack(KEYS))
