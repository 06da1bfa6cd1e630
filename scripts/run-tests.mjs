// Runs the compiled test files with node's test runner, prints the spec report, and ends with the
// line CI reads: "N passed, N failed". Exits non-zero when anything failed.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, existsSync, readdirSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

// Only *.test.js files: node's own discovery would also run every helper under a test/ folder.
function testFiles(path) {
  if (!statSync(path).isDirectory()) return [path];
  return readdirSync(path).sort().flatMap((entry) => {
    const child = join(path, entry);
    return statSync(child).isDirectory() ? testFiles(child) : entry.endsWith('.test.js') ? [child] : [];
  });
}
// The longest files start first (two lanes, ~1 000 s of files): a long one started last would run
// alone at the end of the run.
const LONGEST_FIRST = [
  'package/package.test.js',
  'cli-topologies.test.js',
  'zookeeper-faults.test.js',
  'etcd-faults.test.js',
  'safety/fault-redlock.test.js',
  'outage.test.js',
  'postgres-faults.test.js',
  'redlock-restart.test.js',
  'cli.test.js',
  'dashboard-stores.test.js',
  'dashboard-topologies.test.js',
  'safety/storm.test.js',
  'shutdown-drain.test.js',
];
const rank = (file) => {
  const i = LONGEST_FIRST.findIndex((tail) => file.endsWith(`/${tail}`));
  return i === -1 ? LONGEST_FIRST.length : i;
};
const targets = (process.argv.length > 2 ? process.argv.slice(2) : ['build/test'])
  .flatMap(testFiles)
  .map((file, i) => ({ file, i }))
  .sort((a, b) => rank(a.file) - rank(b.file) || a.i - b.i)
  .map(({ file }) => file);
const tap = join(mkdtempSync(join(tmpdir(), 'padlock-tests-')), 'report.tap');
const result = spawnSync(
  process.execPath,
  [
    '--test',
    '--test-concurrency=2',
    // A hang fails its test (and names it) instead of stalling the run.
    '--test-timeout=300000',
    '--test-reporter=spec',
    '--test-reporter-destination=stdout',
    '--test-reporter=tap',
    `--test-reporter-destination=${tap}`,
    ...targets,
  ],
  { stdio: 'inherit' },
);
const report = existsSync(tap) ? readFileSync(tap, 'utf8') : '';
const count = (label) => Number(new RegExp(`^# ${label} (\\d+)$`, 'm').exec(report)?.[1] ?? 0);
const passed = count('pass');
const failed = count('fail') + count('cancelled');
console.log(`${passed} passed, ${failed} failed`);
process.exit(result.status === 0 && failed === 0 && passed > 0 ? 0 : 1);
