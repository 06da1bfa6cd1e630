--[[
  One lock name's histogram of hold and wait times (src/timings.ts), for the dashboard.
  KEYS[1] the histogram (P:{name}:timings)
  Returns its fields and values, flat.
]]
return redis.call('HGETALL', KEYS[1])
