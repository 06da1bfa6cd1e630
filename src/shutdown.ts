/**
 * `releaseOnExit`: on SIGTERM or SIGINT, every Padlock that asked for it closes as `close()` does
 * (running `withLock` functions get its `drainMs` to finish, are told, then their locks and the
 * rest are released), and then the process ends as it would have without padlock.
 *
 * - One listener per signal for the whole process, however many Padlocks: no MaxListeners warning,
 *   and one re-raise. It is added with the first such Padlock and removed with the last one's
 *   `close()`.
 * - "As it would have": Node ends a process on these signals only while nothing listens for them.
 *   So when padlock's listener is the only one, padlock removes it once the locks are released and
 *   raises the same signal again: the process dies of it (exit status 128 + signal, as before).
 *   When the application has its own listener, the signal was the application's to handle and the
 *   process keeps running: padlock releases and re-raises nothing.
 * - A second signal while the locks are being released ends the process at once (when nothing
 *   else listens), as a second Ctrl-C is expected to.
 */
import { debug, debugEnabled } from './observability/debug-log.js';

/** The signals padlock handles. */
export const EXIT_SIGNALS = ['SIGTERM', 'SIGINT'] as const;

/** What shutdown needs of a Padlock. */
export interface Closable {
  close(): Promise<void>;
  /** How long its close() lets running `withLock` functions finish first. */
  readonly drainMs: number;
}

/** Longer than close() takes to release once drained (5 s): added to the longest drain, it keeps the process alive while padlock closes. */
const RELEASE_KEEP_ALIVE_MS = 10_000;

const registered = new Set<Closable>();
let releasing: Promise<void> | undefined;

/** padlock's listener for each signal (one function per signal, so that it can be told apart and removed). */
const listeners = new Map<NodeJS.Signals, () => void>(EXIT_SIGNALS.map((signal) => [signal, () => onSignal(signal)]));

/** Starts releasing `padlock`'s locks on SIGTERM/SIGINT. */
export function releaseOnExit(padlock: Closable): void {
  if (registered.size === 0) {
    for (const [signal, listener] of listeners) process.on(signal, listener);
  }
  registered.add(padlock);
}

/** Stops it (from `close()`); the last one removes the listeners. */
export function forgetOnExit(padlock: Closable): void {
  if (!registered.delete(padlock) || registered.size > 0) return;
  for (const [signal, listener] of listeners) process.removeListener(signal, listener);
}

function othersListen(signal: NodeJS.Signals): boolean {
  return process.listeners(signal).some((listener) => listener !== listeners.get(signal));
}

function onSignal(signal: NodeJS.Signals): void {
  // Decided now: Node has just called every listener of the signal, the application's too.
  const reraise = !othersListen(signal);
  if (releasing !== undefined) {
    // A second signal while releasing: end now, as without padlock.
    if (reraise) raise(signal);
    return;
  }
  const padlocks = [...registered];
  if (debugEnabled) debug(`${signal}: releasing the locks of ${padlocks.length} Padlock(s)${reraise ? `, then raising ${signal} again` : ' (the application handles the signal)'}`);
  // Whatever the application has left open, the process stays until the locks are released.
  const keepAlive = setTimeout(() => undefined, Math.max(...padlocks.map((padlock) => padlock.drainMs)) + RELEASE_KEEP_ALIVE_MS);
  releasing = Promise.allSettled(padlocks.map((padlock) => padlock.close())).then(() => {
    clearTimeout(keepAlive);
    releasing = undefined;
    if (debugEnabled) debug(`${signal}: locks released`);
    if (reraise) raise(signal);
  });
}

/** Ends the process by `signal`, as if padlock had never listened for it. */
function raise(signal: NodeJS.Signals): void {
  for (const [name, listener] of listeners) process.removeListener(name, listener);
  registered.clear();
  if (othersListen(signal)) return; // someone started listening meanwhile: the process is theirs
  process.kill(process.pid, signal);
}
