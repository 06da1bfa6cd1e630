/** What every checker worker (an OS process forked by a fleet) does with its parent. */

/** Sends `message` to the parent; resolves once it is written, or at once when the parent is gone. */
export function sendToParent(message: object): Promise<void> {
  return new Promise((resolve) => {
    if (process.send === undefined || !process.connected) resolve();
    else process.send(message, undefined, {}, () => resolve());
  });
}

/** An error's class name, for a record (what the parent compares), whatever was thrown. */
export function errorName(error: unknown): string {
  return error instanceof Error ? error.name : typeof error;
}
