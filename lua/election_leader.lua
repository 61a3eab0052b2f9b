-- election_leader: read an election's latest leader record and whether its
-- leader still leads: whether the owner it names still holds the
-- election's lock (a record outlives its leader until the next leader
-- writes one; a lock held by an owner that wrote no record, a Redisson
-- RLock on the same name, is no leader). Read-only.
--
-- KEYS[1]  lock: the election's lock hash (its name)
-- KEYS[2]  leader: the leader hash ({name}:leader), see election_proclaim.lua
-- ARGV     none
--
-- Returns {live, seq, term, since, value}: live 1 when the record's owner
-- holds the lock, else 0; seq 0 (and the rest empty) when no record was
-- ever written.
--
-- Reply    {live, seq, term, since, value string}
-- Code     Live = 1: the record's owner holds the lock

local cur = redis.call('hmget', KEYS[2], 'owner', 'seq', 'term', 'since', 'value')
local live = 0
if cur[1] and redis.call('hexists', KEYS[1], cur[1]) == 1 then
  live = 1
end
return {live, tonumber(cur[2]) or 0, tonumber(cur[3]) or 0, tonumber(cur[4]) or 0, cur[5] or ''}
