// Writes a file whole: readers see the old file or the new one, never a part. The build scripts
// rewrite files (package.json at `npm pack`, the embedded Lua) while other test files may read them.
import { renameSync, writeFileSync } from 'node:fs';

/** Replaces `path` with `text` in one rename. */
export function replaceFile(path, text) {
  const partial = `${path}.${process.pid}.partial`;
  writeFileSync(partial, text);
  renameSync(partial, path);
}
