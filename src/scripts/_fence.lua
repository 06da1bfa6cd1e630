-- The next fence of a lock: greater than every fence it had before. Fences are read off the
-- server's clock in microseconds, and never below the last one + 1, which the fence key keeps for
-- FENCE_RETENTION_MS after each acquisition (then it expires: a lock used once leaves no key behind
-- for long). So a fence exceeds every earlier one as long as the server's clock never steps back by
-- more than FENCE_RETENTION_MS (see docs/protocol.md), and a server restarted empty still hands out
-- greater fences. A µs count since 1970 is about 1.8e15: exact in a Lua number and in JavaScript,
-- but Lua's own number-to-text conversion would round it: written as the text this returns second.
-- Redlock proposes the fence instead (`proposed` > 0, the client's clock in µs, see
-- src/topology/redlock.ts): the masters of a majority then give the same fence, and it is on a
-- majority after one round; a master whose last fence is higher gives its own + 1 instead.
local FENCE_RETENTION_MS = 3600000
local function next_fence(fence_key, proposed)
  local floor = proposed or 0
  if floor <= 0 then
    local t = redis.call('TIME')
    floor = tonumber(t[1]) * 1000000 + tonumber(t[2])
  end
  -- INCRBY 0 reads the last fence (0 when none), and refuses a key that is not an integer.
  local fence = math.max(redis.call('INCRBY', fence_key, 0) + 1, floor)
  local text = string.format('%.0f', fence)
  redis.call('SET', fence_key, text, 'PX', FENCE_RETENTION_MS)
  return fence, text
end

-- Raises the fence key to at least `fence` (its decimal `text`), for an hour as next_fence keeps it.
local function raise_fence(fence_key, fence, text)
  if redis.call('INCRBY', fence_key, 0) < fence then
    redis.call('SET', fence_key, text, 'PX', FENCE_RETENTION_MS)
  end
end
