/**
 * The protected resource: a counter on its own redis-server, incremented read-modify-write by each
 * critical section. Every read and write carries the holder's fence; the store refuses any fence
 * lower than the highest it has seen (reads too: a check on writes alone would still let an old
 * holder's write land between a new holder's read and write). One Lua script does each operation,
 * so the check and the change are atomic, and it logs every operation for the checker.
 *
 * The 'unchecked' mode accepts everything (it still logs which operations were stale): it is the
 * "no fence check" broken variant.
 */
import type { Redis } from 'ioredis';

/** Whether the store enforces fences. */
export type StoreMode = 'checked' | 'unchecked';

/** One logged operation. */
export interface StoreEntry {
  readonly op: 'read' | 'write';
  readonly fence: number;
  readonly accepted: boolean;
  /** The fence was lower than the highest seen before it. */
  readonly stale: boolean;
  /** The counter's value when the operation ran. */
  readonly current: number;
  /** For writes: the value the writer had read (a write is a lost update when this differs from `current`). */
  readonly expected: number | null;
  readonly owner: string;
}

/** Keys of one store. */
export interface StoreKeys {
  readonly value: string;
  readonly highest: string;
  readonly log: string;
  readonly mode: string;
}

export function storeKeys(name: string): StoreKeys {
  const base = `store:{${name}}`;
  return { value: `${base}:value`, highest: `${base}:highest`, log: `${base}:log`, mode: `${base}:mode` };
}

const SCRIPT = `--[[
  One operation on a fenced counter.
  KEYS[1] value  KEYS[2] highest fence seen  KEYS[3] log (list)  KEYS[4] mode ('unchecked' accepts all)
  ARGV[1] 'read' | 'write'  ARGV[2] fence  ARGV[3] owner  ARGV[4] the value the writer read (write only)
  Returns {accepted 1|0, value}: for a read the counter, for an accepted write the new value.
]]
local op, fence, owner = ARGV[1], tonumber(ARGV[2]), ARGV[3]
local highest = tonumber(redis.call('GET', KEYS[2]) or 0)
local current = tonumber(redis.call('GET', KEYS[1]) or 0)
local stale = fence < highest
local accepted = (not stale) or redis.call('GET', KEYS[4]) == 'unchecked'
if fence > highest then redis.call('SET', KEYS[2], fence) end
local value = current
if accepted and op == 'write' then
  value = tonumber(ARGV[4]) + 1
  redis.call('SET', KEYS[1], value)
end
redis.call('RPUSH', KEYS[3], table.concat({op, fence, accepted and 1 or 0, stale and 1 or 0, current, ARGV[4] or '-', owner}, ' '))
return {accepted and 1 or 0, value}
`;

/** The outcome of one operation. */
export interface StoreReply {
  readonly accepted: boolean;
  readonly value: number;
}

/** A client of the fenced store. */
export class FencedStore {
  readonly keys: StoreKeys;

  constructor(private readonly redis: Redis, name: string) {
    this.keys = storeKeys(name);
  }

  /** Empties the store and sets its mode. */
  async reset(mode: StoreMode): Promise<void> {
    await this.redis.del(this.keys.value, this.keys.highest, this.keys.log);
    await this.redis.set(this.keys.mode, mode);
  }

  read(fence: number, owner: string): Promise<StoreReply> {
    return this.#run('read', fence, owner, '-');
  }

  /** Writes `readValue + 1`, where `readValue` is what this holder read. */
  write(fence: number, owner: string, readValue: number): Promise<StoreReply> {
    return this.#run('write', fence, owner, String(readValue));
  }

  async #run(op: 'read' | 'write', fence: number, owner: string, expected: string): Promise<StoreReply> {
    const k = this.keys;
    const reply: unknown = await this.redis.eval(SCRIPT, 4, k.value, k.highest, k.log, k.mode, op, fence, owner, expected);
    if (!Array.isArray(reply) || typeof reply[0] !== 'number' || typeof reply[1] !== 'number') {
      throw new TypeError(`unexpected fenced-store reply ${JSON.stringify(reply)}`);
    }
    return { accepted: reply[0] === 1, value: reply[1] };
  }

  /** The counter's value now. */
  async value(): Promise<number> {
    return Number((await this.redis.get(this.keys.value)) ?? 0);
  }

  /** Every operation so far, in the order the store applied them. */
  async log(): Promise<StoreEntry[]> {
    const lines = await this.redis.lrange(this.keys.log, 0, -1);
    return lines.map(parseEntry);
  }
}

function parseEntry(line: string): StoreEntry {
  const [op, fence, accepted, stale, current, expected, owner] = line.split(' ');
  if ((op !== 'read' && op !== 'write') || owner === undefined) throw new TypeError(`bad store log line: ${line}`);
  return {
    op,
    fence: Number(fence),
    accepted: accepted === '1',
    stale: stale === '1',
    current: Number(current),
    expected: expected === '-' || expected === undefined ? null : Number(expected),
    owner,
  };
}
