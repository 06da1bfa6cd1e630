/**
 * A one-shot stop that padlock's own waits listen to: what an AbortSignal does for them, without
 * an EventTarget per acquisition. Node's AbortController and its listeners are heavy for a call
 * made on every acquire: replacing them took a fifth off a worker's client CPU per acquisition in
 * the bench's 8-process scale run (bench/README.md, "Client work per acquisition, cold"). A
 * caller's own `signal` stays an AbortSignal; it is listened to only when given.
 */

/** Something a wait can be stopped by. */
export interface Abortable {
  readonly aborted: boolean;
  /** What to reject with once aborted. */
  readonly reason: unknown;
  /** Calls `listener` when this aborts (never if it has already); returns what stops listening. */
  onAbort(listener: () => void): () => void;
}

const nothing = (): void => undefined;

/** An {@link Abortable} that its owner aborts once. */
export class Interrupt implements Abortable {
  #aborted = false;
  #reason: unknown = undefined;
  #listeners: Set<() => void> | undefined;

  /** Whether {@link abort} was called. */
  get aborted(): boolean {
    return this.#aborted;
  }

  /** The first reason given to {@link abort}; `undefined` before. */
  get reason(): unknown {
    return this.#reason;
  }

  /** Aborts with `reason` and tells every listener once; later calls change nothing. */
  abort(reason: unknown): void {
    if (this.#aborted) return;
    this.#aborted = true;
    this.#reason = reason;
    const listeners = this.#listeners;
    this.#listeners = undefined;
    if (listeners !== undefined) for (const listener of listeners) listener();
  }

  /** Calls `listener` on the abort (never if it already happened); returns what stops listening. */
  onAbort(listener: () => void): () => void {
    if (this.#aborted) return nothing;
    const listeners = (this.#listeners ??= new Set());
    listeners.add(listener);
    return () => listeners.delete(listener);
  }

  /** Throws the reason if aborted. */
  throwIfAborted(): void {
    if (this.#aborted) throw this.#reason;
  }
}
