--[[
  Adds a Padlock's recorded hold and wait times to one lock name's histogram (src/timings.ts): a
  small hash of bucket counters that expires once nothing was recorded for a while.
  KEYS[1] the histogram (P:{name}:timings)
  ARGV[1] its expiry in ms, then pairs of field, increment
  Returns 1.
]]
for i = 2, #ARGV, 2 do
  redis.call('HINCRBY', KEYS[1], ARGV[i], ARGV[i + 1])
end
redis.call('PEXPIRE', KEYS[1], ARGV[1])
return 1
