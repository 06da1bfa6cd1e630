--[[
  Read a lock's state without changing it.
  KEYS[1] lock hash
  Returns {fence, pttl, owner1, count1, owner2, count2, ...}; fence 0 (and no owners) when the lock
  is free. pttl is the key's PTTL: -2 when absent, a tombstone's when freed moments ago.
]]
local fence = tonumber(redis.call('HGET', KEYS[1], ':fence') or 0)
local result = {fence, redis.call('PTTL', KEYS[1])}
if fence > 0 then
  local fields = redis.call('HGETALL', KEYS[1])
  for i = 1, #fields, 2 do
    if string.sub(fields[i], 1, 1) ~= ':' then
      result[#result + 1] = fields[i]
      result[#result + 1] = tonumber(fields[i + 1])
    end
  end
end
return result
