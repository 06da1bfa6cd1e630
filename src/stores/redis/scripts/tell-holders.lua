--[[
  Tell the holders of a lock freed by force (operators) at once: publishes the lock's name on the
  prefix's force-release channel, to which every Padlock that holds a lock listens for its life. A
  Padlock holding that name checks its holds there and then (the message is only a hint: a hold
  still in Redis is kept).
  KEYS[1] the channel, P:forced (declared so that a Cluster runs the call on the node of its slot,
  where SPUBLISH must run; no key is read or written)
  ARGV[1] the lock's name   ARGV[2] 'SPUBLISH' (a Cluster: sharded pub/sub) or 'PUBLISH'
  Returns 1.
]]
redis.call(publish_command(ARGV[2]), KEYS[1], ARGV[1])
return 1
