/**
 * How a duration reads in a message: whole milliseconds (`5000 ms`), never the float a clock
 * difference gives (`4995.32678 ms`). Every error and warning that states a time in ms uses it.
 */

/** `ms` as whole milliseconds with their unit: `formatMs(4995.32678)` is `'4995 ms'`. */
export function formatMs(ms: number): string {
  return `${Math.round(ms)} ms`;
}
