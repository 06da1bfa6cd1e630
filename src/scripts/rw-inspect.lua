--[[
  Read/write lock: read its state without changing it.
  KEYS[1] state hash   KEYS[2] leases sorted set
  Returns {writer, readers, fence}: 1 when a write hold is held (else 0), how many read holds are
  held (owners, not counts), and the last fence handed out (0: none known).
]]
local now = server_now()
local writer, readers = 0, 0
for _, member in ipairs(redis.call('ZRANGEBYSCORE', KEYS[2], '(' .. now, '+inf')) do
  if string.sub(member, 1, 2) == 'w:' then
    writer = 1
  else
    readers = readers + 1
  end
end
return {writer, readers, tonumber(redis.call('HGET', KEYS[1], 'fence') or '0')}
