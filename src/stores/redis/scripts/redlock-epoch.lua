--[[
  Redlock's restart rule, one master's epoch marker (src/stores/redis/topology/master-epoch.ts, docs/protocol.md
  "A master that lost its data").
  KEYS[1] the marker. ARGV[1] `check` or `resolve`; ARGV[2] for `check` the longest lease the caller
  knows of (recorded if longer), for `resolve` the sit-out (ms); ARGV[3] the marker's TTL (ms; never
  less than twice the longest lease recorded); ARGV[4] for `resolve` the epoch's `born` it read, for
  `check` the run id the caller read from this very process over the connection it sends on (`''`
  when it knows none).
  Reply {0, 0, longest, born, run, bare} for an unresolved epoch, else {1, ms still sitting out,
  longest, born, run, bare}; `run` is the process's run id, `bare` 1 when the epoch began on a master
  that had no marker at all (its marker ran out: no hold it granted lives; or it lost its data), 0
  when it began over another process's marker (restarted from a file, or a replica promoted).
  A check that changes nothing (the common case: this process's resolved epoch, no longer lease)
  writes nothing, and lengthens the marker's life only once half of it has run: it then still lives
  at least the longest lease recorded, longer than any hold the caller's round can grant.
  The run id costs an INFO (about half the check's time): a check that names the run the marker
  holds is taken at its word, for the caller sends one only over the TCP connection it read it on,
  which no other process can answer.
]]
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local m = redis.call('HMGET', KEYS[1], 'run', 'born', 'until', 'longest', 'bare')
local run = m[1]
if ARGV[1] ~= 'check' or ARGV[4] == '' or ARGV[4] ~= run then
  run = string.match(redis.call('INFO', 'server'), 'run_id:(%w+)')
end
local born, untilAt, longest = tonumber(m[2]), tonumber(m[3]), tonumber(m[4]) or 0
-- A marker written before `bare` was recorded: taken as not bare (a first use is never inferred from it).
local bare = tonumber(m[5]) or 0
local changed = false
if m[1] ~= run or not born or not untilAt then
  if m[1] then bare = 0 else bare = 1 end
  born, untilAt, changed = now, -1, true
end
if ARGV[1] == 'resolve' then
  if untilAt == -1 and born == tonumber(ARGV[4]) then
    untilAt, changed = born + tonumber(ARGV[2]), true
  end
elseif tonumber(ARGV[2]) > longest then
  longest, changed = tonumber(ARGV[2]), true
end
local ttl = math.max(tonumber(ARGV[3]), 2 * longest)
if changed then
  redis.call('HSET', KEYS[1], 'run', run, 'born', born, 'until', untilAt, 'longest', longest, 'bare', bare)
  redis.call('PEXPIRE', KEYS[1], ttl)
elseif redis.call('PTTL', KEYS[1]) < ttl / 2 then
  redis.call('PEXPIRE', KEYS[1], ttl)
end
if untilAt == -1 then return {0, 0, longest, born, run, bare} end
return {1, math.max(0, untilAt - now), longest, born, run, bare}
