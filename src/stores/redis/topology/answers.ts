/**
 * The answers of several servers to one call, gathered as they come (Redlock's masters). A round
 * waits for them only until they decide its outcome ({@link Answers.decide}); what comes after that
 * goes to whoever still needs it ({@link Answers.forEach}, {@link Answers.whenAll}). One object per
 * call and a callback per answer: a promise chain per server and per listener cost more than the
 * round's own arithmetic, twice per acquire+release.
 */
export class Answers<Answer> {
  /** Every answer so far, in the order they came. */
  readonly got: Answer[] = [];
  readonly #expected: number;
  #enough: ((got: readonly Answer[]) => boolean) | undefined;
  #decided: ((got: Answer[]) => void) | undefined;
  /** Called with every answer added from now on. */
  readonly #listeners: ((answer: Answer) => void)[] = [];
  #allIn: ((got: readonly Answer[]) => void)[] = [];

  /** Gathers the answers of `expected` servers. */
  constructor(expected: number) {
    this.#expected = expected;
  }

  /** Whether every server has answered (or timed out). */
  get complete(): boolean {
    return this.got.length >= this.#expected;
  }

  /** Adds one server's answer (each server's once). */
  add(answer: Answer): void {
    const { got } = this;
    got.push(answer);
    for (const listener of this.#listeners) listener(answer);
    const enough = this.#enough;
    if (enough !== undefined && (got.length >= this.#expected || enough(got))) this.#decide();
    if (got.length === this.#expected) {
      const waiting = this.#allIn;
      this.#allIn = [];
      for (const then of waiting) then(got);
    }
  }

  /**
   * The answers so far, once `enough` says they decide the call (asked after each answer) or every
   * server has answered: a copy, which later answers do not change.
   */
  decide(enough: (got: readonly Answer[]) => boolean): Promise<Answer[]> {
    return new Promise((resolve) => {
      this.#enough = enough;
      this.#decided = resolve;
      if (this.complete || (this.got.length > 0 && enough(this.got))) this.#decide();
    });
  }

  #decide(): void {
    const decided = this.#decided;
    this.#enough = this.#decided = undefined;
    decided?.(this.got.slice());
  }

  /** Calls `each` with every answer from the `from`-th on: those already in now, the rest as they come. */
  forEach(each: (answer: Answer) => void, from = 0): void {
    for (let i = from; i < this.got.length; i++) each(this.got[i] as Answer);
    if (!this.complete) this.#listeners.push(each);
  }

  /** Calls `then` with every answer once all are in (at once if they are). */
  whenAll(then: (got: readonly Answer[]) => void): void {
    if (this.complete) then(this.got);
    else this.#allIn.push(then);
  }

  /** Every answer, once all are in. */
  all(): Promise<readonly Answer[]> {
    return new Promise((resolve) => this.whenAll(resolve));
  }
}
