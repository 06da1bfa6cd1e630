--[[
  The newest entries of the dashboard's audit log (src/dashboard/audit-log.ts).
  KEYS[1] the log (P:dashboard:audit)
  ARGV[1] how many
  Returns the entries, newest first.
]]
return redis.call('LRANGE', KEYS[1], 0, tonumber(ARGV[1]) - 1)
