/**
 * The two ways the topology harness makes a node fail, and how it comes back.
 */
import type { RedisServer } from '../../src/devserver/redis-server.js';

/**
 * `kill`: SIGKILL, connections are refused (a crash); `pause`: SIGSTOP, connections are accepted
 * and nothing is answered (a hung process, or a partition as its peers see it).
 */
export type Fault = 'kill' | 'pause';

/** Makes `server` fail the given way. */
export async function inflict(server: RedisServer, fault: Fault): Promise<void> {
  if (fault === 'kill') await server.kill();
  else server.pause();
}

/** Undoes {@link inflict}: SIGCONT, or a restart on the same port and directory with no data. */
export async function recover(server: RedisServer, fault: Fault): Promise<void> {
  if (fault === 'kill') await server.restart();
  else server.resume();
}
