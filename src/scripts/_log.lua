-- A request id is remembered in the lock hash's ':log' field (the newest 16), so that a script the
-- client resends after a reconnect is recognised and not applied twice.
local LOG_ENTRIES = 16
local function read_log(key)
  return redis.call('HGET', key, ':log') or ' '
end
local function seen(log, req)
  return string.find(log, ' ' .. req .. ' ', 1, true) ~= nil
end
local function remember(key, log, req)
  redis.call('HSET', key, ':log', string.sub(' ' .. req .. log, 1, (#req + 1) * LOG_ENTRIES + 1))
end
