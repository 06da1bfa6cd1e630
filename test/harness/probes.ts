/**
 * Probes into one Padlock, for tests that must tell apart outcomes that look alike from outside.
 *
 * How its waiters wake: by a message (a release's wake-up or handoff) or by a fallback timer (the
 * next heartbeat, or the holder's lease running out). A wake-up that was missed is made good by the
 * next heartbeat, at most a second later, so the lock still comes and the time taken cannot tell
 * the two apart on a loaded machine; this can. It wraps the subscriber every waiter sleeps on.
 *
 * Which scripts it sends, and when: INFO commandstats counts every client's calls together, and
 * cannot say which script ran.
 */
import type { Padlock } from '../../src/index.js';
import type { GaveUp, ScriptCall as ScriptCallOf } from '../../src/stores/redis/topology/topology.js';
import type { Watch } from '../../src/stores/redis/subscriber.js';
import { redisInternals } from '../../src/testing.js';

/** The longest timer Node accepts. */
const FOREVER_MS = 2_147_483_647;

export interface WakeProbe {
  /** Sleeps that a message addressed to their waiter ended (or that found one in the mailbox). */
  readonly messages: number;
  /** Sleeps that their timer ended (a heartbeat or the holder's lease): each is followed by a retry. */
  readonly fallbacks: number;
  /** The duration of every sleep a waiter asked for, in order. */
  readonly sleeps: readonly number[];
  /**
   * With `on` (the default), from now on a timer no longer ends a sleep: a waiter sleeps until a
   * message names it or it gives up, so a missed wake-up leaves it waiting until its `waitMs` runs
   * out instead of being made good by a heartbeat. Its heartbeats stop with it, so its queue entry
   * lapses one heartbeat allowance (3 s at most) after its last one: turn this on only where the
   * message is due at once. Turned off, it applies to sleeps that start afterwards.
   */
  messagesOnly(on?: boolean): void;
}

export interface WakeProbeOptions {
  /** Start with {@link WakeProbe.messagesOnly} on. */
  readonly messagesOnly?: boolean;
  /** Called as a waiter goes to sleep (after its attempt failed and it found no message waiting). */
  readonly onSleep?: () => void;
}

/** Starts observing (and, with `messagesOnly`, steering) how `padlock`'s waiters wake. */
export function probeWakes(padlock: Padlock, options: WakeProbeOptions = {}): WakeProbe {
  const subscriber = redisInternals(padlock).subscriber;
  const watch = subscriber.watch.bind(subscriber);
  let strict = options.messagesOnly === true;
  const sleeps: number[] = [];
  const probe = {
    messages: 0,
    fallbacks: 0,
    sleeps,
    messagesOnly(on = true): void {
      strict = on;
    },
  };
  subscriber.watch = (channel: string): Watch => {
    const inner = watch(channel);
    const take = (owner: string): string | undefined => {
      const message = inner.take(owner);
      if (message !== undefined) probe.messages++;
      return message;
    };
    return {
      ready: inner.ready,
      take,
      close: () => inner.close(),
      sleep: async (ms, signal, owner) => {
        sleeps.push(ms);
        options.onSleep?.();
        for (let first = true; ; first = false) {
          if (!first) {
            // Turned strict mid-sleep, or woken by a reconnect: a message may wait in the mailbox.
            const mail = take(owner);
            if (mail !== undefined) return mail;
          }
          const message = await inner.sleep(strict ? FOREVER_MS : ms, signal, owner);
          if (message !== null) {
            probe.messages++;
            return message;
          }
          if (!strict) {
            probe.fallbacks++;
            return null;
          }
        }
      },
    };
  };
  return probe;
}

/** One script call, as `padlock` hands it to its client. */
export interface ScriptCall {
  /** The script's file name (`acquire.lua`, …). */
  readonly script: string;
  /** 1 for the first call seen, and so on. */
  readonly call: number;
}

export interface ScriptProbeHooks {
  /** As a call is handed to the client (before Redis can have run it). */
  readonly sent?: (call: ScriptCall) => void;
  /** As its reply (or error) comes back, before padlock reads it. */
  readonly answered?: (call: ScriptCall) => void;
}

/**
 * Counts the scripts `padlock` sends from now on, by file name, at its topology (the one way every
 * call reaches Redis).
 */
export function probeScripts(padlock: Padlock, hooks: ScriptProbeHooks = {}): ReadonlyMap<string, number> {
  const counts = new Map<string, number>();
  const topology = redisInternals(padlock).topology;
  let calls = 0;
  const observe = <R>(call: ScriptCallOf<R>, send: (call: ScriptCallOf<R>) => Promise<R>): Promise<R> => {
    const script = call.script.name;
    counts.set(script, (counts.get(script) ?? 0) + 1);
    const seen = { script, call: ++calls };
    const reply = send(call);
    hooks.sent?.(seen);
    return reply.finally(() => hooks.answered?.(seen));
  };
  const run = topology.run.bind(topology);
  const send = topology.send.bind(topology);
  topology.run = <R>(call: ScriptCallOf<R>): Promise<R> => observe(call, run);
  topology.send = <R>(call: ScriptCallOf<R>, gaveUp?: GaveUp): Promise<R> => observe(call, (c) => send(c, gaveUp));
  return counts;
}
