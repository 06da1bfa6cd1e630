/**
 * The fences Redlock proposes to its masters. Each master gives a fresh hold the proposed fence
 * unless its own last fence is as high (then its own + 1). When the masters of the granting majority
 * all gave the proposal, it already stands on a majority and needs no second round to write it back:
 * the common case, since proposals come from a clock that only moves forward.
 *
 * A proposal is the wall clock in microseconds, never below the greatest fence this process has
 * seen + 1 (a Lamport clock: a process whose clock is behind catches up on the first fence it sees).
 * Fences stay strictly increasing whatever the clocks do: a master that gave less than the hold's
 * fence is raised before the hold is returned (docs/protocol.md).
 */
export class FenceProposer {
  #last = 0;

  /** The next fence to propose: strictly greater than every one proposed or seen before. */
  propose(): number {
    const now = Math.floor((performance.timeOrigin + performance.now()) * 1000);
    this.#last = Math.max(this.#last + 1, now);
    return this.#last;
  }

  /** Takes note of a fence the masters gave, so the next proposal exceeds it. */
  observe(fence: number): void {
    if (fence > this.#last) this.#last = fence;
  }
}
