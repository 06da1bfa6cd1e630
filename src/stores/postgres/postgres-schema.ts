/**
 * What padlock installs in its PostgreSQL schema: two tables, two sequences and the functions every
 * call runs (one statement, one round trip each). The SQL is here, not in a file read at run time,
 * so that it is the same text whether padlock creates the schema on first use or a team runs
 * {@link postgresSchemaSql} through its migrations (docs/postgres.md lists each object).
 *
 * Every function that changes a lock's queue first takes a transaction-level advisory lock on the
 * lock's key (`lock_key`): the takes, releases and wake-ups of one lock run one after another, while
 * different locks never wait for each other (but for a 64-bit hash collision, which only serializes).
 */

/** The schema's layout version: a schema installed by another version is installed again (every statement is idempotent). */
export const SCHEMA_VERSION = 2;

/** A schema name padlock accepts: an unquoted lower-case identifier (no quoting, no case folding to explain). */
export const SCHEMA_PATTERN = /^[a-z_][a-z0-9_]{0,62}$/;

/**
 * The SQL that installs padlock's tables and functions in `schema` (created if missing). Idempotent:
 * it may run again, and concurrently (it serializes itself on an advisory lock). For teams that run
 * migrations: apply it there and pass `postgresCreateSchema: false`.
 */
export function postgresSchemaSql(schema = 'padlock'): string {
  if (!SCHEMA_PATTERN.test(schema)) throw new TypeError(`schema "${schema}" is not a lower-case identifier (a-z, 0-9, _; up to 63)`);
  const s = schema;
  return `
SELECT pg_advisory_xact_lock(hashtextextended('padlock schema ${s}', 0));
CREATE SCHEMA IF NOT EXISTS ${s};

-- Fences: one sequence for every lock, never reset or cycled (docs/protocol.md argues why a fence
-- from it is strictly increasing per lock across restarts, with no row per lock).
CREATE SEQUENCE IF NOT EXISTS ${s}.fences AS bigint NO CYCLE;
-- Queue order: each participant's place, given when it joins.
CREATE SEQUENCE IF NOT EXISTS ${s}.tickets AS bigint NO CYCLE;

-- One row per holder or waiter of a lock; a lock with none has no row.
CREATE TABLE IF NOT EXISTS ${s}.participants (
  prefix text NOT NULL,          -- the Padlock's prefix
  family text NOT NULL,          -- mutex (mutex and fairMutex), rw, semaphore
  name text NOT NULL,            -- the lock's name, as the caller gave it
  role text NOT NULL,            -- lock (mutex, writer), read, permit
  owner text NOT NULL,           -- the owner token
  ticket bigint NOT NULL,        -- place in the queue
  permits integer NOT NULL,      -- permits taken (1 but for a semaphore)
  lock_limit integer NOT NULL,   -- the semaphore's limit as its holder made it (1 otherwise)
  passes text,                   -- a read taken inside a write hold: the writer's owner
  fence bigint UNIQUE,           -- set when granted; NULL while waiting
  hold_count integer NOT NULL,   -- holds of this owner (re-entries); 0 while waiting
  expires_at timestamptz NOT NULL, -- lease end (a waiter's: when it must have looked again)
  channel text NOT NULL,         -- the LISTEN channel of the Padlock that waits or holds
  PRIMARY KEY (prefix, family, name, role, owner)
);
CREATE INDEX IF NOT EXISTS participants_queue ON ${s}.participants (prefix, family, name, ticket);
CREATE INDEX IF NOT EXISTS participants_expiry ON ${s}.participants (expires_at);

-- A semaphore's stored limit (setPermits), for one hour after the last one.
CREATE TABLE IF NOT EXISTS ${s}.limits (
  prefix text NOT NULL,
  name text NOT NULL,
  permits integer NOT NULL,
  expires_at timestamptz NOT NULL,
  PRIMARY KEY (prefix, name)
);

CREATE TABLE IF NOT EXISTS ${s}.meta (version integer NOT NULL);

CREATE OR REPLACE FUNCTION ${s}.lock_key(p_prefix text, p_family text, p_name text) RETURNS bigint
LANGUAGE sql IMMUTABLE AS $$ SELECT hashtextextended(p_prefix || '/' || p_family || '/' || p_name, 7) $$;

CREATE OR REPLACE FUNCTION ${s}.ms_until(t timestamptz, now_ timestamptz) RETURNS integer
LANGUAGE sql IMMUTABLE AS $$ SELECT greatest(0, floor(extract(epoch FROM t - now_) * 1000))::integer $$;

-- The limit in force: the stored one while it lasts, else the one given.
CREATE OR REPLACE FUNCTION ${s}.limit_of(p_prefix text, p_family text, p_name text, p_default integer) RETURNS integer
LANGUAGE sql STABLE AS $$
  SELECT CASE WHEN p_family <> 'semaphore' THEN p_default ELSE coalesce(
    (SELECT l.permits FROM ${s}.limits l WHERE l.prefix = p_prefix AND l.name = p_name AND l.expires_at > clock_timestamp()),
    p_default) END
$$;

-- Whether participant me may hold now: a lock role when first; a read when no other owner's writer
-- (nor one it passes) is before it; permits when those up to and including its own fit the limit.
CREATE OR REPLACE FUNCTION ${s}.may_hold(me ${s}.participants, p_limit integer) RETURNS boolean
LANGUAGE sql STABLE AS $$
  SELECT CASE me.role
    WHEN 'lock' THEN NOT EXISTS (SELECT 1 FROM ${s}.participants p
      WHERE p.prefix = me.prefix AND p.family = me.family AND p.name = me.name AND p.ticket < me.ticket)
    WHEN 'read' THEN NOT EXISTS (SELECT 1 FROM ${s}.participants p
      WHERE p.prefix = me.prefix AND p.family = me.family AND p.name = me.name AND p.ticket < me.ticket
        AND p.role = 'lock' AND p.owner <> me.owner AND p.owner IS DISTINCT FROM me.passes)
    ELSE (SELECT coalesce(sum(p.permits), 0) FROM ${s}.participants p
      WHERE p.prefix = me.prefix AND p.family = me.family AND p.name = me.name AND p.ticket <= me.ticket) <= p_limit
  END
$$;

-- Tells the waiters that may hold now, in queue order, and no other: one NOTIFY each, on its own
-- Padlock's channel, naming its owner. Stops at the first that may not (every later one waits too).
CREATE OR REPLACE FUNCTION ${s}.wake(p_prefix text, p_family text, p_name text) RETURNS void
LANGUAGE plpgsql AS $$
DECLARE w ${s}.participants;
BEGIN
  FOR w IN SELECT * FROM ${s}.participants p WHERE p.prefix = p_prefix AND p.family = p_family AND p.name = p_name AND p.fence IS NULL ORDER BY p.ticket LOOP
    EXIT WHEN NOT ${s}.may_hold(w, ${s}.limit_of(p_prefix, p_family, p_name, w.lock_limit));
    PERFORM pg_notify(w.channel, w.owner);
  END LOOP;
END $$;

-- Deletes the lock's participants whose lease ran out (a dead holder's, a gone waiter's); wakes
-- who may hold after. How many were deleted.
CREATE OR REPLACE FUNCTION ${s}.purge(p_prefix text, p_family text, p_name text) RETURNS integer
LANGUAGE plpgsql AS $$
DECLARE n integer;
BEGIN
  DELETE FROM ${s}.participants p WHERE p.prefix = p_prefix AND p.family = p_family AND p.name = p_name AND p.expires_at <= clock_timestamp();
  GET DIAGNOSTICS n = ROW_COUNT;
  IF n > 0 THEN PERFORM ${s}.wake(p_prefix, p_family, p_name); END IF;
  RETURN n;
END $$;

-- A fresh take for owner: held (with its fence), waiting (its row stays in the queue, to be looked
-- at again within retry_ms, or when woken), busy (not held and not queued: p_wait false) or over
-- (more permits than the limit).
CREATE OR REPLACE FUNCTION ${s}.take(p_prefix text, p_family text, p_name text, p_role text, p_owner text, p_permits integer,
  p_limit integer, p_lease_ms integer, p_wait boolean, p_passes text, p_channel text,
  OUT state text, OUT fence bigint, OUT hold_count integer, OUT remaining_ms integer, OUT lim integer, OUT retry_ms integer)
LANGUAGE plpgsql AS $$
DECLARE
  me ${s}.participants;
  now_ timestamptz;
  lease interval := p_lease_ms * interval '1 millisecond';
  existed boolean;
BEGIN
  PERFORM pg_advisory_xact_lock(${s}.lock_key(p_prefix, p_family, p_name));
  PERFORM ${s}.purge(p_prefix, p_family, p_name);
  now_ := clock_timestamp();
  lim := ${s}.limit_of(p_prefix, p_family, p_name, p_limit);
  SELECT * INTO me FROM ${s}.participants p
    WHERE p.prefix = p_prefix AND p.family = p_family AND p.name = p_name AND p.role = p_role AND p.owner = p_owner;
  existed := FOUND;
  IF existed AND me.fence IS NOT NULL THEN
    -- This owner's take already granted (sent again after a lost answer): the same hold.
    state := 'held'; fence := me.fence; hold_count := me.hold_count; remaining_ms := ${s}.ms_until(me.expires_at, now_);
    RETURN;
  END IF;
  IF p_role = 'permit' AND p_permits > lim THEN
    IF existed THEN
      DELETE FROM ${s}.participants p WHERE p.prefix = p_prefix AND p.family = p_family AND p.name = p_name AND p.role = p_role AND p.owner = p_owner;
      PERFORM ${s}.wake(p_prefix, p_family, p_name);
    END IF;
    state := 'over';
    RETURN;
  END IF;
  IF NOT existed THEN
    INSERT INTO ${s}.participants VALUES (p_prefix, p_family, p_name, p_role, p_owner, nextval('${s}.tickets'), p_permits, p_limit,
      p_passes, NULL, 0, now_ + lease, p_channel) RETURNING * INTO me;
  END IF;
  IF ${s}.may_hold(me, lim) THEN
    UPDATE ${s}.participants p SET fence = nextval('${s}.fences'), hold_count = 1, expires_at = now_ + lease
      WHERE p.prefix = p_prefix AND p.family = p_family AND p.name = p_name AND p.role = p_role AND p.owner = p_owner
      RETURNING p.fence INTO fence;
    state := 'held'; hold_count := 1; remaining_ms := p_lease_ms;
    -- Readers (or permits) queued behind this one may hold beside it.
    IF existed THEN PERFORM ${s}.wake(p_prefix, p_family, p_name); END IF;
  ELSIF p_wait THEN
    -- A waiter's row lives a lease (2 s at least, so a short lease does not make its wait a poll) past its last look.
    UPDATE ${s}.participants p SET expires_at = now_ + greatest(p_lease_ms, 2000) * interval '1 millisecond', channel = p_channel
      WHERE p.prefix = p_prefix AND p.family = p_family AND p.name = p_name AND p.role = p_role AND p.owner = p_owner;
    state := 'waiting';
    -- Looked at again when the first lease before it ends (its holder may be dead), and before its own row would.
    SELECT least(greatest(p_lease_ms, 2000) / 2, min(${s}.ms_until(p.expires_at, now_)) + 1) INTO retry_ms FROM ${s}.participants p
      WHERE p.prefix = p_prefix AND p.family = p_family AND p.name = p_name AND p.ticket < me.ticket;
    retry_ms := coalesce(retry_ms, greatest(p_lease_ms, 2000) / 2);
  ELSE
    DELETE FROM ${s}.participants p WHERE p.prefix = p_prefix AND p.family = p_family AND p.name = p_name AND p.role = p_role AND p.owner = p_owner;
    IF existed THEN PERFORM ${s}.wake(p_prefix, p_family, p_name); END IF;
    state := 'busy';
  END IF;
END $$;

-- A waiter gives up (its wait timed out or was aborted): its row goes, and who may hold now is told.
CREATE OR REPLACE FUNCTION ${s}.leave(p_prefix text, p_family text, p_name text, p_role text, p_owner text) RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_advisory_xact_lock(${s}.lock_key(p_prefix, p_family, p_name));
  DELETE FROM ${s}.participants p WHERE p.prefix = p_prefix AND p.family = p_family AND p.name = p_name
    AND p.role = p_role AND p.owner = p_owner AND p.fence IS NULL;
  IF FOUND THEN PERFORM ${s}.wake(p_prefix, p_family, p_name); END IF;
END $$;

-- One more hold for an owner that holds (a re-entry, from any Padlock): its lease never shortened.
CREATE OR REPLACE FUNCTION ${s}.reenter(p_prefix text, p_family text, p_name text, p_role text, p_owner text, p_lease_ms integer,
  OUT fence bigint, OUT hold_count integer, OUT remaining_ms integer)
LANGUAGE plpgsql AS $$
DECLARE now_ timestamptz;
BEGIN
  PERFORM pg_advisory_xact_lock(${s}.lock_key(p_prefix, p_family, p_name));
  now_ := clock_timestamp();
  UPDATE ${s}.participants p SET hold_count = p.hold_count + 1, expires_at = greatest(p.expires_at, now_ + p_lease_ms * interval '1 millisecond')
    WHERE p.prefix = p_prefix AND p.family = p_family AND p.name = p_name AND p.role = p_role AND p.owner = p_owner
      AND p.fence IS NOT NULL AND p.expires_at > now_
    RETURNING p.fence, p.hold_count, ${s}.ms_until(p.expires_at, now_) INTO fence, hold_count, remaining_ms;
END $$;

-- Gives back p_count holds of owner: the holds it has left (0: the row is gone and the next are
-- woken), or -1 when it holds nothing (its lease ran out: the row goes too).
CREATE OR REPLACE FUNCTION ${s}.release(p_prefix text, p_family text, p_name text, p_role text, p_owner text, p_count integer)
RETURNS integer LANGUAGE plpgsql AS $$
DECLARE me ${s}.participants;
BEGIN
  PERFORM pg_advisory_xact_lock(${s}.lock_key(p_prefix, p_family, p_name));
  SELECT * INTO me FROM ${s}.participants p
    WHERE p.prefix = p_prefix AND p.family = p_family AND p.name = p_name AND p.role = p_role AND p.owner = p_owner AND p.fence IS NOT NULL;
  IF NOT FOUND THEN RETURN -1; END IF;
  IF me.expires_at > clock_timestamp() AND me.hold_count > p_count THEN
    UPDATE ${s}.participants p SET hold_count = p.hold_count - p_count
      WHERE p.prefix = p_prefix AND p.family = p_family AND p.name = p_name AND p.role = p_role AND p.owner = p_owner;
    RETURN me.hold_count - p_count;
  END IF;
  DELETE FROM ${s}.participants p WHERE p.prefix = p_prefix AND p.family = p_family AND p.name = p_name AND p.role = p_role AND p.owner = p_owner;
  PERFORM ${s}.wake(p_prefix, p_family, p_name);
  RETURN CASE WHEN me.expires_at > clock_timestamp() THEN 0 ELSE -1 END;
END $$;

-- The watchdog's one statement per tick: every hold named by its fence, to at least p_ms[i] from
-- now, if it is still held. The fences renewed and their remaining lease; a missing fence is lost.
CREATE OR REPLACE FUNCTION ${s}.renew(p_fences bigint[], p_ms integer[]) RETURNS TABLE (fence bigint, remaining_ms integer)
LANGUAGE sql AS $$
  UPDATE ${s}.participants p SET expires_at = greatest(p.expires_at, clock_timestamp() + r.ms * interval '1 millisecond')
    FROM unnest(p_fences, p_ms) AS r(fence, ms)
    WHERE p.fence = r.fence AND p.expires_at > clock_timestamp()
    RETURNING p.fence, ${s}.ms_until(p.expires_at, clock_timestamp())
$$;

-- Deletes every holder of the lock, whoever holds (operators); true when someone held. Each holder's
-- Padlock is told on its own channel ('forced <name>', sent at commit: after the rows are gone), and
-- checks its holds of that name at once rather than at its next renewal.
CREATE OR REPLACE FUNCTION ${s}.force_release(p_prefix text, p_family text, p_name text) RETURNS boolean
LANGUAGE plpgsql AS $$
DECLARE
  n integer := 0;
  holder_channel text;
BEGIN
  PERFORM pg_advisory_xact_lock(${s}.lock_key(p_prefix, p_family, p_name));
  FOR holder_channel IN DELETE FROM ${s}.participants p WHERE p.prefix = p_prefix AND p.family = p_family AND p.name = p_name
    AND p.fence IS NOT NULL AND p.expires_at > clock_timestamp() RETURNING p.channel LOOP
    -- One notice per channel: PostgreSQL folds identical notifications of one transaction.
    PERFORM pg_notify(holder_channel, 'forced ' || p_name);
    n := n + 1;
  END LOOP;
  PERFORM ${s}.purge(p_prefix, p_family, p_name);
  PERFORM ${s}.wake(p_prefix, p_family, p_name);
  RETURN n > 0;
END $$;

-- Stores a semaphore's limit for one hour, and lets in the waiters a raise admits.
CREATE OR REPLACE FUNCTION ${s}.set_limit(p_prefix text, p_name text, p_permits integer) RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_advisory_xact_lock(${s}.lock_key(p_prefix, 'semaphore', p_name));
  DELETE FROM ${s}.limits l WHERE l.expires_at <= clock_timestamp();
  INSERT INTO ${s}.limits VALUES (p_prefix, p_name, p_permits, clock_timestamp() + interval '1 hour')
    ON CONFLICT (prefix, name) DO UPDATE SET permits = excluded.permits, expires_at = excluded.expires_at;
  PERFORM ${s}.wake(p_prefix, 'semaphore', p_name);
END $$;

-- Rows of locks nobody used since their lease ran out (a holder that died, on a name never taken
-- again), and stored limits past their hour: what keeps the tables bounded by the locks in use.
CREATE OR REPLACE FUNCTION ${s}.sweep() RETURNS integer
LANGUAGE plpgsql AS $$
DECLARE n integer;
BEGIN
  -- A minute past its end: every take purges its own lock's expired rows first, so none of these is
  -- one a take in progress is looking at.
  DELETE FROM ${s}.participants p WHERE p.expires_at < clock_timestamp() - interval '1 minute';
  GET DIAGNOSTICS n = ROW_COUNT;
  DELETE FROM ${s}.limits l WHERE l.expires_at <= clock_timestamp();
  RETURN n;
END $$;

-- The in-transaction check: whether the hold with this fence of lock p_name is still held now. Its
-- row is locked FOR KEY SHARE until the caller's transaction ends, so no release, expiry purge or
-- force-release can delete it (and no next holder be granted) before that transaction commits;
-- renewals (which change no key column) go on. Use it in the transaction that writes the data.
CREATE OR REPLACE FUNCTION ${s}.holds(p_name text, p_fence bigint) RETURNS boolean
LANGUAGE plpgsql AS $$
BEGIN
  PERFORM 1 FROM ${s}.participants p WHERE p.fence = p_fence AND p.name = p_name AND p.expires_at > clock_timestamp() FOR KEY SHARE;
  RETURN FOUND;
END $$;

-- The same check, failing the caller's transaction when the hold is gone.
CREATE OR REPLACE FUNCTION ${s}.assert_holds(p_name text, p_fence bigint) RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
  IF NOT ${s}.holds(p_name, p_fence) THEN
    RAISE EXCEPTION 'padlock: lock "%" is no longer held with fence %', p_name, p_fence
      USING ERRCODE = 'P0001', HINT = 'the lease ran out or the lock was released: this transaction must not commit';
  END IF;
END $$;

DELETE FROM ${s}.meta;
INSERT INTO ${s}.meta VALUES (${SCHEMA_VERSION});
`;
}
