/**
 * Owner tokens are unguessable: 128 bits from the operating system's CSPRNG, never `Math.random`.
 */
import { describe, it, before } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, readdirSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { RedisServer } from '../../src/devserver/redis-server.js';
import { newOwnerToken, newRequestId } from '../../src/tokens.js';
import { padlockOn, startServer } from '../harness/redis.js';

let server: RedisServer;
before(async () => {
  server = await startServer();
});

const DRAWS = 100_000;

describe('security: owner tokens', () => {
  it(`${DRAWS} owner tokens are distinct 128-bit values whose every bit is fair`, () => {
    const seen = new Set<string>();
    const ones = new Array<number>(128).fill(0);
    for (let i = 0; i < DRAWS; i++) {
      const token = newOwnerToken();
      assert.match(token, /^[0-9a-f]{32}$/, '32 hex digits: 128 bits');
      seen.add(token);
      const bytes = Buffer.from(token, 'hex');
      for (let bit = 0; bit < 128; bit++) if (((bytes[bit >> 3] ?? 0) >> (7 - (bit & 7))) & 1) ones[bit] = (ones[bit] ?? 0) + 1;
    }
    assert.equal(seen.size, DRAWS, 'no token repeats');
    // Each bit is 1 in half the draws; 6 standard deviations (sqrt(n)/2 each) leave room only for a
    // broken generator (a stuck bit, a 64-bit source stretched to 128, a Math.random-like bias).
    const sd = Math.sqrt(DRAWS) / 2;
    for (const [bit, count] of ones.entries()) assert.ok(Math.abs(count - DRAWS / 2) < 6 * sd, `bit ${bit} is 1 in ${count} of ${DRAWS} draws`);
  });

  it('request ids are distinct too (a resent script is recognised by its id alone)', () => {
    const seen = new Set<string>();
    for (let i = 0; i < DRAWS; i++) seen.add(newRequestId());
    assert.equal(seen.size, DRAWS);
  });

  it('leases carry such tokens, a new one per top-level acquisition', async () => {
    const p = padlockOn(server);
    const owners = new Set<string>();
    for (let i = 0; i < 50; i++) {
      const lease = await p.mutex('tokens:lease').acquire();
      assert.match(lease.owner, /^[0-9a-f]{32}$/);
      owners.add(lease.owner);
      await lease.release();
    }
    assert.equal(owners.size, 50);
  });
});

/** The compiled library modules: every file reachable by relative imports from the public entry. */
function libraryModules(entry: string): string[] {
  const found = new Set<string>();
  const visit = (file: string): void => {
    if (found.has(file)) return;
    found.add(file);
    const source = readFileSync(file, 'utf8');
    for (const match of source.matchAll(/(?:from|import)\s*\(?\s*['"](\.{1,2}\/[^'"]+)['"]/g)) {
      const target = match[1];
      if (target !== undefined) visit(resolve(dirname(file), target));
    }
  };
  visit(entry);
  return [...found];
}

const here = dirname(fileURLToPath(import.meta.url));
const buildSrc = resolve(here, '../../src');
const sourceScripts = resolve(here, '../../../src/stores/redis/scripts');

describe('security: no Math.random', () => {
  it('no library module reachable from the public entry, nor any Lua script, mentions a weak generator', () => {
    const modules = libraryModules(join(buildSrc, 'index.js'));
    assert.ok(modules.length >= 10, `found the library's modules: ${modules.length}`);
    assert.ok(modules.some((m) => m.endsWith('tokens.js')));
    // Comments may name Math.random (to say it is not used); code may not.
    const code = (file: string): string => readFileSync(file, 'utf8').replace(/\/\*[\s\S]*?\*\//g, '').replace(/^\s*\/\/.*$/gm, '');
    const offenders = modules.filter((file) => /\bMath\s*(\.\s*random|\[\s*['"`]random)/.test(code(file)));
    assert.ok(/Math\.random/.test('x = Math.random();') && !/Math\.random/.test(code(join(buildSrc, 'tokens.js'))), 'the filter drops comments only');
    assert.deepEqual(offenders, [], 'compiled library code calling Math.random');
    const lua = readdirSync(sourceScripts).filter((f) => f.endsWith('.lua'));
    assert.ok(lua.length > 0);
    for (const file of lua) assert.doesNotMatch(readFileSync(join(sourceScripts, file), 'utf8'), /math\.random/, file);
  });

  it('a full acquire/wait/renew/re-enter/release/close cycle never calls Math.random', async () => {
    const original = Math.random;
    const calls: string[] = [];
    Math.random = (): number => {
      calls.push(new Error('Math.random called').stack ?? '');
      throw new Error('padlock must not use Math.random');
    };
    try {
      const a = padlockOn(server);
      const b = padlockOn(server);
      const errors: Error[] = [];
      a.on('error', (e) => errors.push(e));
      b.on('error', (e) => errors.push(e));
      const lease = await a.mutex('tokens:cycle').acquire({ leaseMs: 90, autoExtend: true });
      const waiting = b.mutex('tokens:cycle').acquire({ waitMs: 5_000 });
      await new Promise((r) => setTimeout(r, 300)); // several watchdog renewals
      const inner = await b.mutex('tokens:cycle').acquire({ owner: lease.owner });
      await inner.release();
      await lease.extend(1_000);
      await lease.release();
      const next = await waiting;
      assert.ok(next.fence > lease.fence);
      await a.withLock('tokens:cycle:2', () => a.withLock('tokens:cycle:2', (l) => assert.equal(l.holdCount, 2)));
      const fixed = await b.mutex('tokens:cycle:2').tryAcquire({ leaseMs: 50 });
      assert.ok(fixed !== null);
      await fixed.release();
      await b.close();
      await a.close();
      assert.deepEqual(errors, []);
    } finally {
      Math.random = original;
    }
    assert.deepEqual(calls, [], 'Math.random was called');
  });
});
