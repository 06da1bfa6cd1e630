/**
 * Who runs: the raw baseline, padlock's lock kinds, and each peer library at its defaults plus a few
 * retry settings to tune it (the fastest in a short contended run is kept as "tuned"); and the same
 * on a Redlock set of independent masters, where padlock runs its mutex and each peer its Redlock
 * mode. The scale run's lease holders and waiters are the peers at their defaults with retries unbounded.
 */
import { readFileSync } from 'node:fs';
import { padlockKinds, type ContenderSpec } from './contenders.js';

/** Installed version of a devDependency (from its package.json, which `exports` may not expose). */
export function installedVersion(name: string): string {
  return versionIn(new URL(`../../node_modules/${name}/package.json`, import.meta.url));
}

/** This repository's version (run from `build/bench/`). */
export function padlockVersion(): string {
  return versionIn(new URL('../../package.json', import.meta.url));
}

function versionIn(file: URL): string {
  try {
    const pkg: unknown = JSON.parse(readFileSync(file, 'utf8'));
    const version = typeof pkg === 'object' && pkg !== null && 'version' in pkg ? pkg.version : undefined;
    return typeof version === 'string' ? version.replace(/^v/, '') : '?';
  } catch {
    return '?';
  }
}

export const RAW: ContenderSpec = { label: 'raw SET NX + Lua del', library: 'raw' };

export const PADLOCKS: ContenderSpec[] = padlockKinds.map((kind) => ({ label: `padlock ${kind}`, library: 'padlock', kind }));

/** A peer library: its defaults, and the settings tried to tune it. */
export interface Peer {
  readonly name: string;
  readonly version: string;
  readonly defaults: ContenderSpec;
  readonly candidates: readonly ContenderSpec[];
}

/** Never give up while tuned: the harness bounds every wait anyway. */
const NO_LIMIT = 1_000_000;

/**
 * Where a lineup runs, and how its labels say so: on the single server (no suffix), or on a
 * Redlock set of `masters` masters (each peer in its Redlock mode, its label ending "on N masters").
 */
type Placement = { readonly topology: 'single' } | { readonly topology: 'redlock'; readonly masters: number };

function place(placement: Placement, label: string): { label: string; topology?: 'redlock' } {
  return placement.topology === 'single' ? { label } : { label: `${label} on ${placement.masters} masters`, topology: 'redlock' };
}

function redlockLike(library: 'redlock' | 'sesame-redlock', name: string, placement: Placement): Peer {
  const version = installedVersion(name);
  const tuned = (delay: number, jitter: number): ContenderSpec => ({
    ...place(placement, `${name} tuned (retryDelay ${delay}, retryJitter ${jitter}, retryCount ∞)`),
    library,
    settings: { retryCount: -1, retryDelay: delay, retryJitter: jitter },
  });
  return {
    name,
    version,
    defaults: { ...place(placement, `${name} defaults`), library, settings: {} },
    candidates: [tuned(1, 1), tuned(5, 5), tuned(10, 10), tuned(25, 25)],
  };
}

/** redis-semaphore: `Mutex` on one server, `RedlockMutex` on a Redlock set. */
function semaphore(placement: Placement): Peer {
  const name = placement.topology === 'single' ? 'redis-semaphore' : 'redis-semaphore RedlockMutex';
  return {
    name,
    version: installedVersion('redis-semaphore'),
    defaults: { ...place(placement, `${name} defaults`), library: 'redis-semaphore', settings: {} },
    candidates: [1, 2, 5, 10].map((retryInterval) => ({
      ...place(placement, `${name} tuned (retryInterval ${retryInterval}, acquireTimeout 60 s)`),
      library: 'redis-semaphore' as const,
      settings: { retryInterval, acquireTimeout: 60_000 },
    })),
  };
}

/** redlock-universal: `createLock` on one server (also tried in its 'lean' mode), `createRedlock` on a Redlock set. */
function universal(placement: Placement): Peer {
  const name = placement.topology === 'single' ? 'redlock-universal' : 'redlock-universal createRedlock';
  const lean: ContenderSpec[] = [
    {
      ...place(placement, `${name} tuned (performance 'lean', retryDelay 1, retryAttempts ∞)`),
      library: 'redlock-universal',
      settings: { retryDelay: 1, retryAttempts: NO_LIMIT, performance: 'lean' },
    },
  ];
  return {
    name,
    version: installedVersion('redlock-universal'),
    defaults: { ...place(placement, `${name} defaults`), library: 'redlock-universal', settings: {} },
    candidates: [
      ...[1, 5, 10].map((retryDelay) => ({
        ...place(placement, `${name} tuned (retryDelay ${retryDelay}, retryAttempts ∞)`),
        library: 'redlock-universal' as const,
        settings: { retryDelay, retryAttempts: NO_LIMIT },
      })),
      ...(placement.topology === 'single' ? lean : []),
    ],
  };
}

function peers(placement: Placement): readonly Peer[] {
  return [
    redlockLike('redlock', 'redlock', placement),
    redlockLike('sesame-redlock', '@sesamecare-oss/redlock', placement),
    semaphore(placement),
    universal(placement),
  ];
}

export const PEERS: readonly Peer[] = peers({ topology: 'single' });

/**
 * The Redlock lineup on `masters` masters: padlock's mutex (the kind Redlock serves) and each peer
 * in its Redlock mode, with the same tuning candidates as on one server.
 */
export function redlockLineup(masters: number): { readonly padlock: ContenderSpec; readonly peers: readonly Peer[] } {
  const placement: Placement = { topology: 'redlock', masters };
  return { padlock: { ...place(placement, 'padlock mutex'), library: 'padlock', kind: 'mutex' }, peers: peers(placement) };
}

/**
 * The scale run's lease holders and waiters: padlock's kinds, and each peer at its defaults but with
 * no limit on retries (redis-semaphore: an acquire timeout longer than any run), so that a waiting
 * acquisition lasts as long as the lock is held, as padlock's does, at each library's own pace.
 */
export const SCALE_HOLDERS: readonly ContenderSpec[] = [
  ...PADLOCKS,
  { label: 'redlock (retryCount ∞)', library: 'redlock', settings: { retryCount: -1 } },
  { label: '@sesamecare-oss/redlock (retryCount ∞)', library: 'sesame-redlock', settings: { retryCount: -1 } },
  { label: 'redis-semaphore (acquireTimeout 600 s)', library: 'redis-semaphore', settings: { acquireTimeout: 600_000 } },
  { label: 'redlock-universal (retryAttempts ∞)', library: 'redlock-universal', settings: { retryAttempts: NO_LIMIT } },
];
