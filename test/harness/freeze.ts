/**
 * SIGSTOP that has taken effect. `kill()` returns once the signal is queued; a busy process's
 * threads stop a few milliseconds later (up to 4 ms measured here under load), and meanwhile it
 * still answers: a request sent right after `pause()` was answered in 18–31 ms by an etcd member
 * the test believed frozen. So the harness waits until every thread of the process shows as
 * stopped in /proc (Linux, as the servers the tests start).
 */
import { readFileSync, readdirSync } from 'node:fs';

/** How long a stop may take to show before the harness gives up waiting (the signal is sent). */
const STOP_SHOWS_WITHIN_MS = 2_000;

function stopped(pid: number): boolean {
  try {
    return readdirSync(`/proc/${pid}/task`).every((tid) => {
      const stat = readFileSync(`/proc/${pid}/task/${tid}/stat`, 'utf8');
      // The state follows the command name, which is in parentheses and may itself hold spaces.
      const state = stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3);
      return state === 'T' || state === 't';
    });
  } catch {
    return true; // gone, or no /proc: nothing more to wait for
  }
}

/** Sends SIGSTOP to `pid` and returns once each of its threads has stopped. */
export function freeze(pid: number): void {
  process.kill(pid, 'SIGSTOP');
  const until = Date.now() + STOP_SHOWS_WITHIN_MS;
  const pause = new Int32Array(new SharedArrayBuffer(4));
  while (!stopped(pid) && Date.now() < until) Atomics.wait(pause, 0, 0, 1);
}
