--[[
  Re-enter: one more hold for an owner that holds the lock. The fence stays; the lease becomes
  max(remaining, ARGV[2]), never shorter. Recorded in the request log, so a resend counts once.
  The re-entering client is added to the hold's clients (see _lock.lua), so that a hold shared
  across processes (acquire({ owner }) over RPC) is reaped only when all of them are dead.
  KEYS[1] lock
  ARGV[1] owner token  ARGV[2] lease ms  ARGV[3] request id  ARGV[4] the re-entering client's id
  Returns {1, fence, holdCount, pttl}; {-1} when ARGV[1] holds nothing.
]]
local lock, owner, req = KEYS[1], ARGV[1], ARGV[3]
local state = read_lock(lock)
if not state or state.count == 0 or state.owner ~= owner then
  return {-1}
end
local pttl = redis.call('PTTL', lock)
if seen(state.log, req) then
  return {1, tonumber(state.fence), state.count, pttl}
end
state.count = state.count + 1
state.clients = with_client(state.clients, ARGV[4])
state.log = remember(state.log, req)
pttl = math.max(pttl, tonumber(ARGV[2]))
write_lock(lock, state, pttl)
return {1, tonumber(state.fence), state.count, pttl}
