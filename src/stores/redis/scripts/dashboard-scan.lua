--[[
  One SCAN step on the server this call is sent to, for the dashboard (src/dashboard/): a script
  so that any client padlock supports can send it to each server (or Cluster master) the same way.
  ARGV[1] cursor, ARGV[2] MATCH pattern, ARGV[3] COUNT
  Returns {next cursor, keys}.
]]
return redis.call('SCAN', ARGV[1], 'MATCH', ARGV[2], 'COUNT', ARGV[3])
