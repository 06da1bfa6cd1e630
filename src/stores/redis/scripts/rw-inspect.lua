--[[
  Read/write lock: read its state without changing it.
  KEYS[1] state hash   KEYS[2] leases sorted set
          [KEYS[3] queue list: given (the CLI), the holds and queue in detail]
  ARGV[1] with the queue's keys: how many queued waiters to describe, from the queue's head (default 0)
  Returns {writer, readers, fence}: 1 when a write hold is held (else 0), how many read holds are
  held (owners, not counts), and the last fence handed out (0: none known).
  With the three keys, followed by: now (ms on the server's clock), the PTTLs of the state hash, the
  leases set and the queue (-2: absent), the queue's length, {member, count,
  expiry, ...}: three values per live hold (member 'r:<owner>' or 'w:<owner>'), and {owner,
  expiry, leaseMs, allowanceMs, kind, clientId, since, ...}: seven values per described waiter, as
  inspect.lua's (kind 'read' or 'write').
]]
local now = server_now()
local detailed = #KEYS >= 3
local writer, readers = 0, 0
local live = redis.call('ZRANGEBYSCORE', KEYS[2], '(' .. now, '+inf', 'WITHSCORES')
local holds = {}
for i = 1, #live, 2 do
  local member = live[i]
  if string.sub(member, 1, 2) == 'w:' then
    writer = 1
  else
    readers = readers + 1
  end
  if detailed then
    holds[#holds + 1] = member
    holds[#holds + 1] = tonumber(redis.call('HGET', KEYS[1], member) or '0')
    holds[#holds + 1] = tonumber(live[i + 1])
  end
end
local result = {writer, readers, tonumber(redis.call('HGET', KEYS[1], 'fence') or '0')}
if not detailed then
  return result
end
local queue = KEYS[3]
for _, value in ipairs({now, redis.call('PTTL', KEYS[1]), redis.call('PTTL', KEYS[2]), redis.call('PTTL', queue), redis.call('LLEN', queue)}) do
  result[#result + 1] = value
end
result[#result + 1] = holds
result[#result + 1] = describe_waiters(queue, tonumber(ARGV[1] or 0))
return result
