--[[
  Redlock: once a majority of masters granted a fresh hold, its fence becomes F, the greatest any
  of them gave, on each granting master. A later majority shares a master with this one, whose next
  fence then exceeds F: fences increase across overlapping majorities (docs/protocol.md).
  KEYS[1] lock hash   KEYS[2] fence key
  ARGV[1] owner token  ARGV[2] F, as a decimal integer
  Returns 1 when ARGV[1] holds the lock here (its fence is now F), else 0 (nothing changed).
]]
if redis.call('HEXISTS', KEYS[1], ARGV[1]) == 0 then
  return 0
end
redis.call('HSET', KEYS[1], ':fence', ARGV[2])
raise_fence(KEYS[2], tonumber(ARGV[2]), ARGV[2])
return 1
