--[[
  Redlock's restart rule, one master's epoch marker (src/topology/master-epoch.ts, docs/protocol.md
  "A master that lost its data").
  KEYS[1] the marker. ARGV[1] `check` or `resolve`; ARGV[2] for `check` the longest lease the caller
  knows of (recorded if longer), for `resolve` the sit-out (ms); ARGV[3] the marker's TTL (ms; never
  less than twice the longest lease recorded);
  ARGV[4] for `resolve` the epoch's `born` it read. Reply {0, 0, longest, born} for an unresolved epoch,
  else {1, ms still sitting out, longest, born}.
]]
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local run = string.match(redis.call('INFO', 'server'), 'run_id:(%w+)')
local m = redis.call('HMGET', KEYS[1], 'run', 'born', 'until', 'longest')
local born, untilAt, longest = tonumber(m[2]), tonumber(m[3]), tonumber(m[4]) or 0
if m[1] ~= run or not born or not untilAt then
  born, untilAt = now, -1
end
if ARGV[1] == 'resolve' then
  if untilAt == -1 and born == tonumber(ARGV[4]) then untilAt = born + tonumber(ARGV[2]) end
elseif tonumber(ARGV[2]) > longest then
  longest = tonumber(ARGV[2])
end
redis.call('HSET', KEYS[1], 'run', run, 'born', born, 'until', untilAt, 'longest', longest)
redis.call('PEXPIRE', KEYS[1], math.max(tonumber(ARGV[3]), 2 * longest))
if untilAt == -1 then return {0, 0, longest, born} end
return {1, math.max(0, untilAt - now), longest, born}
