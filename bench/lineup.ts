/**
 * Who runs: the raw baseline, padlock's lock kinds, and each peer library at its defaults plus a few
 * retry settings to tune it (the fastest in a short contended run is kept as "tuned").
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

function redlockLike(library: 'redlock' | 'sesame-redlock', name: string): Peer {
  const version = installedVersion(name);
  const tuned = (delay: number, jitter: number): ContenderSpec => ({
    label: `${name} tuned (retryDelay ${delay}, retryJitter ${jitter}, retryCount ∞)`,
    library,
    settings: { retryCount: -1, retryDelay: delay, retryJitter: jitter },
  });
  return {
    name,
    version,
    defaults: { label: `${name} defaults`, library, settings: {} },
    candidates: [tuned(1, 1), tuned(5, 5), tuned(10, 10), tuned(25, 25)],
  };
}

export const PEERS: readonly Peer[] = [
  redlockLike('redlock', 'redlock'),
  redlockLike('sesame-redlock', '@sesamecare-oss/redlock'),
  {
    name: 'redis-semaphore',
    version: installedVersion('redis-semaphore'),
    defaults: { label: 'redis-semaphore defaults', library: 'redis-semaphore', settings: {} },
    candidates: [1, 2, 5, 10].map((retryInterval) => ({
      label: `redis-semaphore tuned (retryInterval ${retryInterval}, acquireTimeout 60 s)`,
      library: 'redis-semaphore' as const,
      settings: { retryInterval, acquireTimeout: 60_000 },
    })),
  },
  {
    name: 'redlock-universal',
    version: installedVersion('redlock-universal'),
    defaults: { label: 'redlock-universal defaults', library: 'redlock-universal', settings: {} },
    candidates: [
      ...[1, 5, 10].map((retryDelay) => ({
        label: `redlock-universal tuned (retryDelay ${retryDelay}, retryAttempts ∞)`,
        library: 'redlock-universal' as const,
        settings: { retryDelay, retryAttempts: NO_LIMIT },
      })),
      {
        label: "redlock-universal tuned (performance 'lean', retryDelay 1, retryAttempts ∞)",
        library: 'redlock-universal',
        settings: { retryDelay: 1, retryAttempts: NO_LIMIT, performance: 'lean' },
      },
    ],
  },
];
