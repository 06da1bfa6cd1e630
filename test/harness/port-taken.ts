/**
 * Servers the tests start pick their ports with `freePort()`, which closes the port before the
 * server binds it: another process (the test files run three at a time) may take it in between. A
 * start that failed so is made again on fresh ports, as the Redis dev server's is. Seen once: an
 * etcd member exited at start with its port taken, and its file then waited out its 300 s time-out
 * on the members left running.
 */
import { readFileSync } from 'node:fs';

/** A server could not bind one of its ports. */
export class PortTakenError extends Error {}

/** The error for a server that exited at start: {@link PortTakenError} when its log says a port was taken. */
export function exitedAtStart(what: string, log: string): Error {
  let said = '';
  try {
    said = readFileSync(log, 'utf8');
  } catch {
    // no log: not a port taken, as far as we know
  }
  const message = `${what} exited at start (see ${log})`;
  return /address already in use/i.test(said) ? new PortTakenError(message) : new Error(message);
}

/** `start()` (which picks its own ports), made again while it fails with {@link PortTakenError}, up to `attempts` times. */
export async function onFreshPorts<T>(start: () => Promise<T>, attempts = 3): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await start();
    } catch (error) {
      if (!(error instanceof PortTakenError) || attempt >= attempts) throw error;
    }
  }
}

/** `servers` once `start()` has started them; if it fails, they are stopped (none left running) and the error thrown. */
export async function startedOrStopped<Servers extends { stop(): Promise<void> }>(servers: Servers, start: () => Promise<unknown>): Promise<Servers> {
  try {
    await start();
  } catch (error) {
    await servers.stop();
    throw error;
  }
  return servers;
}
