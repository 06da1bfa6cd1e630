-- Shared helpers, inserted by the build after each script's header.

-- A request id is remembered in the lock hash's ':log' field (the newest 16), so that a script the
-- client resends after a reconnect is recognised and not applied twice.
local LOG_ENTRIES = 16
local function seen(key, req)
  local log = redis.call('HGET', key, ':log')
  return log ~= false and string.find(log, ' ' .. req .. ' ', 1, true) ~= nil
end
local function remember(key, req)
  local log = redis.call('HGET', key, ':log') or ' '
  redis.call('HSET', key, ':log', string.sub(' ' .. req .. log, 1, (#req + 1) * LOG_ENTRIES + 1))
end

-- Makes the key live at least ms more (never shortens it); returns its remaining lease.
local function lengthen(key, ms)
  local pttl = redis.call('PTTL', key)
  if pttl < ms then
    redis.call('PEXPIRE', key, ms)
    return ms
  end
  return pttl
end
