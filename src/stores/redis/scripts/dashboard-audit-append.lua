--[[
  Appends one entry to the dashboard's audit log (who force-released what, when, why): a capped
  list that expires when no entry was added for a while (src/dashboard/audit-log.ts).
  KEYS[1] the log (P:dashboard:audit)
  ARGV[1] the entry (JSON), ARGV[2] how many entries to keep, ARGV[3] the list's expiry in ms
  Returns the list's length.
]]
redis.call('LPUSH', KEYS[1], ARGV[1])
redis.call('LTRIM', KEYS[1], 0, tonumber(ARGV[2]) - 1)
redis.call('PEXPIRE', KEYS[1], ARGV[3])
return redis.call('LLEN', KEYS[1])
