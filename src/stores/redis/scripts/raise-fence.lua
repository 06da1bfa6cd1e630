--[[
  Redlock: once a majority of masters granted a fresh hold, its fence becomes F, the greatest any
  of them gave, on each granting master that gave less. A later majority shares a master with this
  one, whose next fence then exceeds F: fences increase across overlapping majorities
  (docs/protocol.md).
  KEYS[1] lock
  ARGV[1] owner token  ARGV[2] F, as a decimal integer
  Returns 1 when ARGV[1] holds the lock here (its fence is now at least F), else 0 (nothing changed).
]]
local state = read_lock(KEYS[1])
if not state or state.count == 0 or state.owner ~= ARGV[1] then
  return 0
end
if tonumber(state.fence) < tonumber(ARGV[2]) then
  state.fence = ARGV[2]
  write_lock(KEYS[1], state, nil)
end
return 1
