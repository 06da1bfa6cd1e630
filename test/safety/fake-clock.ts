/**
 * A fake wall clock: replaces the global `Date` with one that reads `offset()` milliseconds away
 * from the real time. Only the wall clock moves; the monotonic clocks (`performance.now()`,
 * `process.hrtime`) are untouched, as they are when an operator or NTP steps a machine's clock.
 */
export function shiftWallClock(offset: () => number): () => void {
  const RealDate = Date;
  class ShiftedDate extends RealDate {
    constructor(value?: string | number | Date) {
      if (value === undefined) super(RealDate.now() + offset());
      else super(value);
    }
    static override now(): number {
      return RealDate.now() + offset();
    }
  }
  globalThis.Date = ShiftedDate as DateConstructor;
  return () => {
    globalThis.Date = RealDate;
  };
}
