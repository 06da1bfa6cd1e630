--[[
  Read a lock's state without changing it.
  KEYS[1] lock
  Returns {fence, pttl, owner, count} while held; {0, pttl} when free. pttl is the key's PTTL: -2
  when absent, the tombstone's when freed.
]]
local state = read_lock(KEYS[1])
local pttl = redis.call('PTTL', KEYS[1])
if state and state.count > 0 then
  return {tonumber(state.fence), pttl, state.owner, state.count}
end
return {0, pttl}
