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
  /**
   * The listener when there is one (nearly always: a call's bound, or an acquisition's listener on
   * close()), else undefined; a Set only for more. One listener coming and going per call costs no
   * Set, whose entries' coming and going rehashes it every few calls.
   */
  #one: (() => void) | undefined;
  #more: Set<() => void> | undefined;

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
    const one = this.#one;
    const more = this.#more;
    this.#one = undefined;
    this.#more = undefined;
    one?.();
    if (more !== undefined) for (const listener of more) listener();
  }

  /** Calls `listener` on the abort (never if it already happened); returns what stops listening. */
  onAbort(listener: () => void): () => void {
    if (this.#aborted) return nothing;
    if (this.#one === undefined) {
      this.#one = listener;
      return () => {
        if (this.#one === listener) this.#one = undefined;
      };
    }
    const more = (this.#more ??= new Set());
    more.add(listener);
    return () => more.delete(listener);
  }

  /** Throws the reason if aborted. */
  throwIfAborted(): void {
    if (this.#aborted) throw this.#reason;
  }
}
