--[[
  Take an owner's entry out of a lock's queue, and do nothing more (any kind's queue). A waiter
  handed its turn by a message that names another entry of its own than its latest (its first
  join was resent after a reconnect, and queued it twice) removes the latest, so that no later
  release gives a turn to it when it no longer waits.
  KEYS[1] the queue list
  ARGV[1] owner token  ARGV[2] its place: its entry as its last call returned it ('?': search)
  Returns 1. Idempotent.
]]
drop_waiter(KEYS[1], ARGV[1], ARGV[2])
return 1
