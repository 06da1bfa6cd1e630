-- A mutex-family lock is one string key: "<fence>|<owner>|<count>|<clients>|<log>". Held while
-- count >= 1 (owner holds it count times); freed, it keeps its last fence and request log as a
-- tombstone (owner '', count 0, clients '') for FENCE_RETENTION_MS, so the next fence exceeds it
-- and a resent release is recognised. The log is " id id … " (newest first, LOG_ENTRIES at most).
-- clients: the ids of the clients (Padlocks) holding it, comma-separated: the one it was granted
-- to, then any other that re-entered the hold with its owner's token; '*' once more than
-- MAX_CLIENTS did (unknown: never reaped). A reaper frees a hold only when every one of them is
-- dead (its liveness key gone: reap.lua).
-- A fence is kept as its decimal text: a µs count since 1970 (about 1.8e15) is exact in a Lua
-- number and in JavaScript, but Lua's own number-to-text conversion would round it.
-- As text: Redis is handed it as is, where a Lua number would be formatted (printf) on every call.
local FENCE_RETENTION_MS = '3600000'
local LOG_ENTRIES = 16
local MAX_CLIENTS = 8

-- The lock's state from its key's value as GET read it (false: the key is missing, then nil).
local function parse_lock(key, value)
  if not value then
    return nil
  end
  local fence, owner, count, clients, log = string.match(value, '^(%d+)|([^|]*)|(%d+)|([^|]*)|(.*)$')
  if not fence then
    error({err = 'WRONGTYPE the lock key ' .. key .. ' holds a value padlock did not write'})
  end
  return {fence = fence, owner = owner, count = tonumber(count), clients = clients, log = log}
end

-- The lock's state, or nil when the key is missing.
local function read_lock(key)
  return parse_lock(key, redis.call('GET', key))
end

-- The fence after `fence` (decimal text, not '0'), as text: its last digit raised when it is not
-- a 9 (no number conversion, which for a 16-digit fence costs Redis a multi-precision parse and a
-- printf), else by arithmetic.
local function fence_after(fence)
  local last = string.byte(fence, -1)
  if last < 57 then
    return string.sub(fence, 1, -2) .. string.char(last + 1)
  end
  return string.format('%.0f', tonumber(fence) + 1)
end

-- The greater of `fence` (the next fence of a free lock, or '0' where it has none) and `proposed`
-- (Redlock's proposal), as decimal text: what next_fence gives, compared as text where both are
-- exact as Lua numbers (below 2^53, as every fence is: a µs count since 1970 is about 1.8e15), with
-- no number conversion; nil when `proposed` is not such a text (next_fence then decides).
local function proposed_fence(fence, proposed)
  if #proposed > 16 or #fence > 16 or not string.find(proposed, '^[1-9]%d*$') then
    return nil
  end
  if (#proposed == 16 and proposed >= '9007199254740992') or (#fence == 16 and fence >= '9007199254740992') then
    return nil
  end
  if #proposed > #fence or (#proposed == #fence and proposed > fence) then
    return proposed
  end
  return fence
end

-- Writes `state` with a lease of `ms` (nil: the key keeps its expiry).
local function write_lock(key, state, ms)
  local value = state.fence .. '|' .. state.owner .. '|' .. state.count .. '|' .. state.clients .. '|' .. state.log
  if ms then
    redis.call('SET', key, value, 'PX', ms)
  else
    redis.call('SET', key, value, 'KEEPTTL')
  end
end

-- The next fence of a lock in `state` (nil: no key), as decimal text: the last one + 1, never below
-- `proposed` (Redlock's proposal, see src/stores/redis/topology/redlock.ts; 0 or nil: none). With neither a key
-- nor a proposal, the server's clock in µs: a lock unused for FENCE_RETENTION_MS (or a server
-- restarted empty) still hands out greater fences as long as the clock has not stepped back by
-- more than that (docs/protocol.md, "Fences").
local function next_fence(state, proposed)
  local floor = proposed or 0
  if floor <= 0 and state and state.fence ~= '0' then
    return fence_after(state.fence)
  end
  local last = state and tonumber(state.fence) or 0
  if last == 0 and floor <= 0 then
    local t = redis.call('TIME')
    floor = tonumber(t[1]) * 1000000 + tonumber(t[2])
  end
  return string.format('%.0f', math.max(last + 1, floor))
end

-- Whether request `req` is in the log already (a resend).
local function seen(log, req)
  return string.find(log, ' ' .. req .. ' ', 1, true) ~= nil
end

-- The log with `req` added.
local function remember(log, req)
  return string.sub(' ' .. req .. log, 1, (#req + 1) * LOG_ENTRIES + 1)
end

-- Frees the lock in `state` as a tombstone: no holder, the fence and log kept.
local function tombstone(key, state)
  state.owner = ''
  state.count = 0
  state.clients = ''
  write_lock(key, state, FENCE_RETENTION_MS)
end

-- The clients field with `client` added (a re-entry by another client): unchanged when it is there
-- already, '*' (unknown, never reaped) beyond MAX_CLIENTS.
local function with_client(clients, client)
  if clients == '*' or string.find(',' .. clients .. ',', ',' .. client .. ',', 1, true) then
    return clients
  end
  if clients == '' then
    return client
  end
  local _, commas = string.gsub(clients, ',', ',')
  if commas + 1 >= MAX_CLIENTS then
    return '*'
  end
  return clients .. ',' .. client
end
