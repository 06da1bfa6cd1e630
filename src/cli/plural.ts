/**
 * English number agreement for the demo's sentences: `1 seller process sells 1 ticket`, not
 * `1 seller processes sell 1 tickets` (`--sellers 1` and `--tickets 1` are allowed).
 */

/** `count` followed by the noun that agrees with it: `plural(1, 'ticket')` is `1 ticket`. */
export function plural(count: number, one: string, many = `${one}s`): string {
  return `${count} ${count === 1 ? one : many}`;
}

/** The present-tense verb that agrees with `count` subjects: `verb(1, 'sells', 'sell')`. */
export function verb(count: number, one: string, many: string): string {
  return count === 1 ? one : many;
}
