--[[
  Read what the server does when its memory is full (padlock warns when it evicts keys: a lock's
  key evicted is a lock taken away from its holder). Reads and writes no key; INFO is allowed in
  scripts where CONFIG GET is not (and managed services often refuse CONFIG to clients).
  KEYS[1] any key of the caller (only to route the call to the server that serves it, on a Cluster)
  Returns {INFO memory (its text), the server's run_id (which tells a failed-over primary apart)}.
]]
local server = redis.call('INFO', 'server')
return {redis.call('INFO', 'memory'), string.match(server, 'run_id:(%x+)') or ''}
