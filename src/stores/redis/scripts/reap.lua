--[[
  Free a hold whose clients are all dead (their liveness keys gone), as release.lua frees a lock:
  the queue's first live waiter is handed the lock (fair) or woken (mutex), else the tombstone
  keeps the fence. Only if the same owner still holds it, with the same clients: a hold taken or
  re-entered since it was read is left alone. A hold whose clients are unknown ('' or '*') never
  is reaped.
  KEYS[1] lock   KEYS[2] queue list
  KEYS[3..] the liveness key of each client in ARGV[2], in its order (P:client:<id>): checked here,
            atomically with the free. Left out only with ARGV[5] 'checked', where they live on
            other servers (a Cluster: another slot) and the caller found them all gone just before
  ARGV[1] owner token expected to hold it  ARGV[2] its clients field, as read (comma-separated ids)
  ARGV[3] waiters' channel prefix  ARGV[4] 'SPUBLISH' (a Cluster: sharded pub/sub) or 'PUBLISH'
  ARGV[5] 'checked' (the liveness keys were checked by the caller), or 'here'
  Returns 1 when it freed the lock; 0 when it did not hold ARGV[1] with ARGV[2] any more (free,
  another owner, other clients: nothing changed); -1 when a client is alive (nothing changed).
]]
local state = read_lock(KEYS[1])
local clients = ARGV[2]
if not state or state.count == 0 or state.owner ~= ARGV[1] or state.clients ~= clients or clients == '' or clients == '*' then
  return 0
end
if ARGV[5] ~= 'checked' then
  local _, commas = string.gsub(clients, ',', ',')
  if #KEYS - 2 ~= commas + 1 then
    return redis.error_reply('ERR reap.lua: ' .. (commas + 1) .. ' clients but ' .. (#KEYS - 2) .. ' liveness keys')
  end
  for i = 3, #KEYS do
    if redis.call('EXISTS', KEYS[i]) == 1 then
      return -1
    end
  end
end
free_lock(KEYS[1], state, KEYS[2], ARGV[3], publish_command(ARGV[4]))
return 1
