-- Makes the key live at least ms more (never shortens it); returns its remaining lease.
local function lengthen(key, ms)
  local pttl = redis.call('PTTL', key)
  if pttl < ms then
    redis.call('PEXPIRE', key, ms)
    return ms
  end
  return pttl
end
