// Runs the compiled test files with node's test runner, prints the spec report, and ends with the
// line CI reads: "N passed, N failed". Exits non-zero when anything failed.
import { createWriteStream, mkdtempSync, readFileSync, readdirSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { PassThrough } from 'node:stream';
import { finished } from 'node:stream/promises';
import { run } from 'node:test';
import { spec, tap } from 'node:test/reporters';

// Only *.test.js files: node's own discovery would also run every helper under a test/ folder.
function testFiles(path) {
  if (!statSync(path).isDirectory()) return [path];
  return readdirSync(path).sort().flatMap((entry) => {
    const child = join(path, entry);
    return statSync(child).isDirectory() ? testFiles(child) : entry.endsWith('.test.js') ? [child] : [];
  });
}
// The package test starts first: it is the longest file (~150 s), and started late it ran alone at
// the end. The others keep their order by name, so that the fault files do not run beside it: its
// compiler takes a core, and a session or lease row beside it failed (a ZooKeeper holder's session
// ran out when the longest files all started together).
const LONGEST_FIRST = ['package/package.test.js'];
const rank = (file) => {
  const i = LONGEST_FIRST.findIndex((tail) => file.endsWith(`/${tail}`));
  return i === -1 ? LONGEST_FIRST.length : i;
};
const targets = (process.argv.length > 2 ? process.argv.slice(2) : ['build/test'])
  .flatMap(testFiles)
  .map((file, i) => ({ file, i }))
  .sort((a, b) => rank(a.file) - rank(b.file) || a.i - b.i)
  .map(({ file }) => file);
const tapPath = join(mkdtempSync(join(tmpdir(), 'padlock-tests-')), 'report.tap');
// node:test's run(), not `node --test`: the command line sorts the files by name, which undoes the
// order above. Each file still runs in a process of its own; one stream of events feeds both the
// spec report (stdout) and the TAP report the counts are read from.
// Three files at a time: most files wait on servers, leases and timers more than they compute (with
// two, the suite kept 1.25 of the 2 cores busy and took ~600 s; with three, 1.5 cores and ~500 s).
const events = run({
  files: targets.map((file) => resolve(file)),
  concurrency: 3,
  // A file that hangs fails (and is named) instead of stalling the run.
  timeout: 300_000,
});
const toSpec = new PassThrough({ objectMode: true });
const toTap = new PassThrough({ objectMode: true });
events.on('data', (event) => {
  toSpec.write(event);
  toTap.write(event);
});
events.on('end', () => {
  toSpec.end();
  toTap.end();
});
const specOut = toSpec.compose(new spec());
specOut.pipe(process.stdout);
const tapOut = createWriteStream(tapPath);
toTap.compose(tap).pipe(tapOut);
await Promise.all([finished(specOut), finished(tapOut)]);
const report = readFileSync(tapPath, 'utf8');
const count = (label) => Number(new RegExp(`^# ${label} (\\d+)$`, 'm').exec(report)?.[1] ?? 0);
const passed = count('pass');
const failed = count('fail') + count('cancelled');
console.log(`${passed} passed, ${failed} failed`);
process.exit(failed === 0 && passed > 0 ? 0 : 1);
