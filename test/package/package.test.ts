/**
 * The package as a user gets it. `npm pack` (which builds), then the tarball installed (from npm's
 * cache when it has padlock's dependencies, else from the registry) into
 * fresh projects, one set with ioredis 5, one with ioredis 6 and one with node-redis alone (no
 * ioredis anywhere: padlock's declarations must not need it): plain JavaScript as ES modules and
 * as CommonJS, and TypeScript under each way of resolving a package a user may pick (`nodenext`,
 * and `node16` with the ioredis 6 project, `bundler`, `commonjs`), compiled by the strictest settings (`strict`,
 * `exactOptionalPropertyTypes`, `noUncheckedIndexedAccess`, no `skipLibCheck`). In each, every code
 * example of README.md (and of docs/api.md and docs/production.md, where its longer sections went)
 * is compiled and run against a real redis-server, and must exit by itself, with code 0, saying
 * nothing on stderr. The examples come from those files themselves (see readme-examples.ts), so
 * the docs and this test cannot drift apart. The ioredis 5 projects also
 * have the OpenTelemetry API and metrics SDK (and run the metrics example); the ioredis 6 and
 * node-redis projects have no OpenTelemetry package, so their runs show that padlock works, and
 * type-checks, without.
 */
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { delimiter, dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { freePort } from '../../src/devserver/redis-server.js';
import { startServer } from '../harness/redis.js';
import { clientOf, expectsSyntaxError, parseExamples, runsIn, sourceFor, type Example, type Target } from './readme-examples.js';

/** The repository: this file runs as build/test/package/package.test.js. */
const root = fileURLToPath(new URL('../../../', import.meta.url));
const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');
const nodeMajor = Number(process.versions.node.split('.')[0]);
/** The most the installed package may weigh, in bytes (`npm pack`'s unpacked size). */
const UNPACKED_BOUND = 1_500_000;
/** A process that has not exited by then is taken to hang (an open handle): it fails its test. */
const EXIT_BOUND_MS = 30_000;
/**
 * With Redis down, an example must still end by itself within this: its calls fail within their
 * `waitMs` (the longest in the README is 30 s), `close()` within 5 s, and the client is closed
 * without waiting for the server.
 */
const DOWN_EXIT_BOUND_MS = 60_000;

interface Result {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
  timedOut: boolean;
}

/** Runs a command to its end (or kills it at `timeoutMs`); never rejects for its exit status. */
function run(command: string, args: readonly string[], options: { cwd: string; env?: NodeJS.ProcessEnv; timeoutMs: number }): Promise<Result> {
  return new Promise((resolve, reject) => {
    // The node running this test runs the user's code too, and is first on PATH for npm and the bin.
    const env = { ...process.env, ...options.env, PATH: `${dirname(process.execPath)}${delimiter}${process.env['PATH'] ?? ''}` };
    const child = spawn(command, args, { cwd: options.cwd, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    let timedOut = false;
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
    const timer = setTimeout(() => {
      timedOut = true;
      child.kill('SIGKILL');
    }, options.timeoutMs);
    child.on('error', (error) => {
      clearTimeout(timer);
      reject(error);
    });
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      resolve({ code, signal, stdout, stderr, timedOut });
    });
  });
}

function show(what: string, result: Result, boundMs = EXIT_BOUND_MS): string {
  const how = result.timedOut ? `did not exit within ${boundMs / 1000} s (something left open?)` : `exited with code ${result.code} (signal ${result.signal})`;
  return `${what} ${how}\n--- stdout\n${result.stdout}--- stderr\n${result.stderr}`;
}

/** The Redis client a project has installed, and nothing else: which examples it runs. */
type ClientInstall = 'ioredis5' | 'ioredis6' | 'node-redis';

/** Where each install's client comes from (the repository's copies), and the package name it is installed as. */
const INSTALLS: Record<ClientInstall, { readonly from: string; readonly as: string }> = {
  ioredis5: { from: 'ioredis', as: 'ioredis' },
  ioredis6: { from: 'ioredis6', as: 'ioredis' },
  'node-redis': { from: 'redis', as: 'redis' },
};

/** A temp project: its package.json "type" and, for TypeScript, its module settings. */
interface Project extends Target {
  readonly name: string;
  readonly client: ClientInstall;
  readonly tsModule?: string;
  readonly tsResolution?: string;
  /**
   * Which of its compiled examples it runs: `all`, or `first` where another project of the same
   * client and module format runs them all (the emitted code differs in its imports only, which the
   * first example's run proves load); `first` also runs what that JavaScript project cannot.
   */
  readonly runs: 'all' | 'first';
}

/** The install that has OpenTelemetry linked in. */
const OTEL_INSTALL: ClientInstall = 'ioredis5';
/** What it links from the repository's node_modules: the API, the metrics SDK and what the SDK needs. */
const OTEL_PACKAGES = ['api', 'sdk-metrics', 'core', 'resources', 'semantic-conventions'];

function js(client: ClientInstall, format: Project['format']): Project {
  return { name: `${client}-js-${format}`, client, language: 'js', format, otel: client === OTEL_INSTALL, runs: 'all' };
}

function typescript(client: ClientInstall, format: Project['format'], tsModule: string, tsResolution: string, runs: Project['runs'] = 'all'): Project {
  return { name: `${client}-ts-${tsModule}-${tsResolution}-${format}`, client, language: 'ts', format, tsModule, tsResolution, otel: client === OTEL_INSTALL, runs };
}

const projects: Project[] = [
  js('ioredis5', 'esm'),
  js('ioredis5', 'cjs'),
  // Each resolution mode type-checks every example; the JavaScript projects above run them all, one
  // per module format, and the TypeScript ones run the first (tsc emits the same code but for its
  // imports, which the first example's run proves load). `node16` resolves as `nodenext` does in TypeScript 5.x
  // (they differ in what code may use, not in how a package's types are found): the ioredis 6
  // project below checks it; `preserve` resolves as `esnext` under `bundler`. A tsc of these
  // projects is ~10 s of a 2-core machine each.
  typescript('ioredis5', 'esm', 'nodenext', 'nodenext', 'first'),
  typescript('ioredis5', 'cjs', 'nodenext', 'nodenext', 'first'),
  typescript('ioredis5', 'esm', 'esnext', 'bundler', 'first'),
  typescript('ioredis5', 'cjs', 'commonjs', 'node10', 'first'),
  // The other clients: how padlock's own types resolve is the ioredis 5 projects' business above;
  // these show each client's examples run, in an ES module JavaScript project (which also runs them
  // with Redis down), and compile in a CommonJS TypeScript one, which runs the first (7 more
  // projects cost the suite ~50 s of a 2-core machine and checked nothing these do not).
  js('ioredis6', 'esm'),
  typescript('ioredis6', 'cjs', 'node16', 'node16', 'first'),
  js('node-redis', 'esm'),
  typescript('node-redis', 'cjs', 'commonjs', 'node10', 'first'),
];

/**
 * Compile-only checks of the published types, beyond the README: internals do not show, and an
 * option set to `undefined` is accepted under exactOptionalPropertyTypes.
 */
const TYPES_CHECK = `import { Lease, MultiLease, Padlock, type AcquireOptions, type PadlockOptions, type RedisClient } from 'padlock';

export function check(padlock: Padlock, lease: Lease, signal: AbortSignal | undefined, clients: readonly RedisClient[]): void {
  // The redis option's type names no client package: any client, or an array of them (Redlock).
  const redlock: PadlockOptions = { redis: clients };
  void redlock;
  // @ts-expect-error a string is no client
  void new Padlock({ redis: 'redis://127.0.0.1:6379' });
  // @ts-expect-error internal: not in the published types
  void padlock.runtime;
  // @ts-expect-error internal: not in the published types
  void lease.hold;
  // Leases are padlock's to make: their constructors take nothing a user can pass.
  // @ts-expect-error no public constructor
  void new Lease();
  // @ts-expect-error no public constructor
  void new MultiLease('a', [lease]);
  const acquire: AcquireOptions = { signal, waitMs: undefined, leaseMs: undefined, autoExtend: undefined, owner: undefined };
  const options: Omit<PadlockOptions, 'redis'> = { prefix: undefined, leaseMs: undefined };
  void acquire;
  void options;
}
`;

/** The files whose tagged examples run here: the README and the docs pages its sections moved to. */
const EXAMPLE_FILES = ['README.md', 'docs/api.md', 'docs/production.md'];

let work: string;
let examples: Example[];

before(async () => {
  examples = EXAMPLE_FILES.flatMap((file) => parseExamples(readFileSync(join(root, file), 'utf8'), file));
  const names = examples.map((example) => example.name);
  assert.deepEqual(names.filter((name, i) => names.indexOf(name) !== i), [], 'every example has a name of its own, across the files');
  work = mkdtempSync(join(tmpdir(), 'padlock-package-'));
  // npm pack runs the prepack script, which builds dist/ from a clean slate.
  const pack = await run('npm', ['pack', '--pack-destination', work], { cwd: root, timeoutMs: 180_000 });
  assert.equal(pack.code, 0, show('npm pack', pack));
  const tarball = readdirSync(work).find((file) => file.endsWith('.tgz'));
  assert.ok(tarball !== undefined, 'npm pack made a tarball');
  const listing = await run('tar', ['-tzf', join(work, tarball)], { cwd: work, timeoutMs: 30_000 });
  const files = new Set(listing.stdout.split('\n').map((line) => line.replace(/^package\//, '')));
  for (const file of ['LICENSE', 'README.md', 'docs/api.md', 'docs/migrating.md', 'package.json', 'dist/index.js', 'dist/index.d.ts', 'dist/cjs/index.js', 'dist/cjs/index.d.ts', 'dist/cjs/package.json', 'dist/cli/main.js', 'dist/dashboard/index.js', 'dist/dashboard/index.d.ts', 'dist/cjs/dashboard/index.js', 'dist/cjs/dashboard/index.d.ts', 'dist/facades/redlock.js', 'dist/facades/redlock.d.ts', 'dist/cjs/facades/redlock.js', 'dist/cjs/facades/redlock.d.ts', 'dist/facades/redis-semaphore.js', 'dist/facades/redis-semaphore.d.ts', 'dist/cjs/facades/redis-semaphore.js', 'dist/cjs/facades/redis-semaphore.d.ts']) {
    assert.ok(files.has(file), `the tarball has ${file}`);
  }
  assert.deepEqual([...files].filter((file) => /^(build|test|node_modules)\//.test(file) || file.endsWith('.tgz')), [], 'no build output, test or tarball in the tarball');
  assert.deepEqual([...files].filter((file) => /^bench\/|\.png$/.test(file)), [], 'no benchmark report or picture: they stay in the repository');

  // One install per client, shared by that client's projects (each a sub-folder with its own
  // package.json): padlock from the tarball, its dependencies from npm's cache where it has them
  // (`npm ci` fills it with their tarballs, but not always with the metadata an install of a
  // tarball resolves them by: on a fresh machine that comes from the registry); then the client and @types/node linked to the
  // repository's copies, after npm, which would prune them as extraneous. A node-redis install has
  // no ioredis: padlock's optional peers are not installed for it.
  for (const client of Object.keys(INSTALLS) as ClientInstall[]) {
    const dir = join(work, client);
    mkdirSync(dir);
    writeFileSync(join(dir, 'package.json'), JSON.stringify({ private: true, dependencies: { padlock: `file:../${tarball}` } }));
    const install = await run('npm', ['install', '--prefer-offline', '--no-audit', '--no-fund', '--ignore-scripts', '--legacy-peer-deps'], { cwd: dir, timeoutMs: 120_000 });
    assert.equal(install.code, 0, show('npm install of the tarball', install));
    const installed = readdirSync(join(dir, 'node_modules'));
    assert.deepEqual(installed.filter((name) => ['ioredis', 'redis', '@redis', 'iovalkey'].includes(name)), [], 'no Redis client comes with padlock (they are optional peers)');
    symlinkSync(join(root, 'node_modules', INSTALLS[client].from), join(dir, 'node_modules', INSTALLS[client].as), 'dir');
    mkdirSync(join(dir, 'node_modules', '@types'), { recursive: true });
    symlinkSync(join(root, 'node_modules', '@types', 'node'), join(dir, 'node_modules', '@types', 'node'), 'dir');
    if (client === OTEL_INSTALL) {
      mkdirSync(join(dir, 'node_modules', '@opentelemetry'));
      for (const name of OTEL_PACKAGES) symlinkSync(join(root, 'node_modules', '@opentelemetry', name), join(dir, 'node_modules', '@opentelemetry', name), 'dir');
    }
  }
});

after(() => {
  if (work !== undefined) rmSync(work, { recursive: true, force: true });
});

/** Writes the project's files; returns the example files to run, relative to the project. */
function writeProject(project: Project, dir: string): { example: Example; file: string }[] {
  mkdirSync(dir);
  writeFileSync(join(dir, 'package.json'), JSON.stringify({ private: true, type: project.format === 'esm' ? 'module' : 'commonjs' }));
  const runs: { example: Example; file: string }[] = [];
  for (const example of examples.filter((e) => runsIn(e, project) && clientOf(e) === INSTALLS[project.client].as)) {
    writeFileSync(join(dir, `${example.name}.${project.language}`), sourceFor(example, project));
    runs.push({ example, file: project.language === 'ts' ? join('out', `${example.name}.js`) : `${example.name}.js` });
  }
  if (project.language === 'ts') {
    writeFileSync(join(dir, 'types-check.ts'), TYPES_CHECK);
    const compilerOptions = {
      strict: true,
      exactOptionalPropertyTypes: true,
      noUncheckedIndexedAccess: true,
      // padlock's declarations, ioredis's and @types/node's are all checked; only TypeScript's own lib
      // files are not (they are not what is tested here, and checking them doubles the time).
      skipLibCheck: false,
      skipDefaultLibCheck: true,
      target: 'es2022',
      module: project.tsModule,
      moduleResolution: project.tsResolution,
      types: ['node'],
      rootDir: '.',
      outDir: 'out',
      noEmitOnError: true,
      // node-redis 6's own declarations default-import node:net and node:tls: its users on module
      // commonjs need esModuleInterop, whatever else they use (padlock's declarations do not).
      ...(project.client === 'node-redis' && project.tsModule === 'commonjs' ? { esModuleInterop: true } : {}),
    };
    writeFileSync(join(dir, 'tsconfig.json'), JSON.stringify({ compilerOptions, include: ['*.ts'] }, null, 2));
  } else {
    // Which build each module system loads.
    const resolve = project.format === 'esm' ? "import { fileURLToPath } from 'node:url';\nconsole.log(fileURLToPath(import.meta.resolve('padlock')));\n" : "console.log(require.resolve('padlock'));\n";
    writeFileSync(join(dir, 'resolve.js'), resolve);
  }
  return runs;
}

// One project at a time: its compiler takes a core, and the suite runs two more files beside it
// (two projects at once put the machine at a load of 11, and a 600 ms lease's renewal in the file
// beside it came late).
describe('the packed package, installed into fresh projects', { concurrency: 1 }, () => {
  for (const project of projects) {
    it(`${project.name}: every example of the README and docs compiles; ${project.runs === 'all' ? 'each' : 'the first'} runs and exits by itself`, { timeout: 300_000 }, async () => {
      const dir = join(work, project.client, project.name);
      const runs = writeProject(project, dir);
      assert.ok(runs.length >= (project.client === 'node-redis' ? 1 : 3), `examples found for ${project.name}: ${runs.map((r) => r.example.name).join(', ')}`);

      if (project.language === 'ts') {
        const compile = await run(process.execPath, [tsc, '-p', '.', '--pretty', 'false', '--listFiles'], { cwd: dir, timeoutMs: 120_000 });
        const errors = compile.stdout.split('\n').filter((line) => line.includes('error TS'));
        assert.equal(compile.code, 0, `tsc (module ${project.tsModule}, moduleResolution ${project.tsResolution}):\n${errors.join('\n') || compile.stdout}`);
        // The declarations of the matching build, and only those: ESM types for ESM code, CommonJS types for CommonJS.
        // (Entry points only: a declaration deeper in dist, e.g. dist/cjs/locks/lock.d.ts, is not one.)
        // An ES module project reads the ES module entry point's declarations, which re-export the CommonJS ones (as its code does).
        const padlockTypes = compile.stdout.split('\n').filter((line) => /\/node_modules\/padlock\/dist\/(cjs\/)?index\.d\.ts$/.test(line));
        assert.deepEqual(padlockTypes.map((line) => line.slice(line.indexOf('/node_modules/padlock/'))).sort(), project.format === 'esm' ? ['/node_modules/padlock/dist/cjs/index.d.ts', '/node_modules/padlock/dist/index.d.ts'] : ['/node_modules/padlock/dist/cjs/index.d.ts']);
      } else {
        const resolved = await run(process.execPath, ['resolve.js'], { cwd: dir, timeoutMs: EXIT_BOUND_MS });
        assert.equal(resolved.code, 0, show('resolve.js', resolved));
        assert.ok(resolved.stdout.trim().endsWith(project.format === 'esm' ? '/node_modules/padlock/dist/index.js' : '/node_modules/padlock/dist/cjs/index.js'), `padlock resolves to its ${project.format} build: ${resolved.stdout}`);
      }

      // Its own server: examples of concurrent projects use the same lock names.
      const server = await startServer();
      // 'first' runs, beside the first, what plain JavaScript cannot (`await using` before Node 24).
      const jsCannot = (example: Example): boolean => expectsSyntaxError(example, { ...project, language: 'js' }, nodeMajor);
      for (const { example, file } of project.runs === 'all' ? runs : runs.filter((r, i) => i === 0 || jsCannot(r.example))) {
        const result = await run(process.execPath, [file], { cwd: dir, env: { REDIS_URL: server.url }, timeoutMs: EXIT_BOUND_MS });
        const what = `example '${example.name}' (${example.file}:${example.line}) in ${project.name}`;
        if (expectsSyntaxError(example, project, nodeMajor)) {
          assert.ok(!result.timedOut && result.code !== 0 && /SyntaxError/.test(result.stderr), show(`${what}: plain JavaScript before Node 24 must refuse it with a SyntaxError, as the README says; it`, result));
          continue;
        }
        assert.ok(!result.timedOut && result.code === 0 && result.signal === null, show(what, result));
        assert.equal(result.stderr, '', show(`${what} wrote to stderr; it`, result));
      }

      // Redis down: each example still ends by itself, failing. Down as refused (nothing listens on
      // the port) and, for ioredis, as hung (a server that takes the connection and never answers:
      // there `await redis.quit()` waited forever). node-redis's own connect() waits for a silent
      // server, before padlock is involved: its example is checked with the refused port only. One
      // project per client install is enough: the code that runs is the same in the others.
      if (project.language === 'js' && project.format === 'esm') {
        const silent = createServer(() => undefined);
        await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
        const address = silent.address();
        assert.ok(address !== null && typeof address === 'object');
        const downs = [`redis://127.0.0.1:${await freePort()}`, ...(project.client === 'node-redis' ? [] : [`redis://127.0.0.1:${address.port}`])];
        try {
          const ends = await Promise.all(
            runs
              .filter(({ example }) => !expectsSyntaxError(example, project, nodeMajor))
              .flatMap(({ example, file }) => downs.map(async (down) => ({ example, down, result: await run(process.execPath, [file], { cwd: dir, env: { REDIS_URL: down }, timeoutMs: DOWN_EXIT_BOUND_MS }) }))),
          );
          for (const { example, down, result } of ends) {
            const what = `example '${example.name}' (${example.file}:${example.line}) in ${project.name}, Redis down (${down === downs[0] ? 'refused' : 'never answering'}),`;
            assert.ok(!result.timedOut, show(what, result, DOWN_EXIT_BOUND_MS));
            assert.notEqual(result.code, 0, show(`${what} cannot succeed; it`, result));
          }
        } finally {
          silent.close();
        }
      }
    });
  }

  it('ships what users run, at most 1.5 MB: the library once (ES module entry points re-export the CommonJS build), the Lua scripts once, no sources or maps, no bin declarations, no development scripts', async () => {
    // The package as npm installed it from the tarball.
    const installed = join(work, 'ioredis5', 'node_modules', 'padlock');
    const files = (readdirSync(installed, { recursive: true, withFileTypes: true }))
      .filter((entry) => entry.isFile())
      .map((entry) => join(entry.parentPath, entry.name).slice(installed.length + 1));
    const withLua = files.filter((file) => file.endsWith('.js') && readFileSync(join(installed, file), 'utf8').includes("redis.call('TIME')"));
    assert.deepEqual(withLua, ['dist/cjs/stores/redis/scripts/embedded.js'], 'the embedded Lua ships once; the ES module build re-exports it');
    assert.deepEqual(files.filter((file) => file.startsWith('src/') || file.endsWith('.map') || file.endsWith('.ts') && !file.endsWith('.d.ts')), [], 'no TypeScript sources, no source maps');
    assert.deepEqual(files.filter((file) => file.startsWith('dist/cli/') && file.endsWith('.d.ts')), [], 'no declarations for the bin');
    assert.ok(files.every((file) => statSync(join(installed, file)).size < 300_000), 'no file of 300 KB or more');
    // What `npm pack` reports as the unpacked size: the sum of the files' sizes.
    const unpacked = files.reduce((sum, file) => sum + statSync(join(installed, file)).size, 0);
    assert.ok(unpacked <= UNPACKED_BOUND, `the package unpacks to ${unpacked} bytes in ${files.length} files, over ${UNPACKED_BOUND}: see what grew (npm pack --dry-run)`);
    assert.deepEqual(files.filter((file) => file.startsWith('dist/') && !file.startsWith('dist/cjs/') && !file.startsWith('dist/cli/')).sort(), ['dashboard/index', 'facades/redis-semaphore', 'facades/redlock', 'index'].flatMap((entry) => [`dist/${entry}.d.ts`, `dist/${entry}.js`]).sort(), 'the ES module side is its entry points (and the bin)');
    const same = await run(process.execPath, ['--input-type=module', '-e', "import { createRequire } from 'node:module'; const esm = await import('padlock'); const cjs = createRequire(import.meta.url)('padlock'); console.log(esm.Padlock === cjs.Padlock && esm.LockTimeoutError === cjs.LockTimeoutError);"], { cwd: join(work, 'ioredis5'), timeoutMs: EXIT_BOUND_MS });
    assert.equal(same.stdout.trim(), 'true', show('import and require load one copy of padlock:', same));
    const manifest = JSON.parse(readFileSync(join(installed, 'package.json'), 'utf8')) as Record<string, unknown>;
    assert.equal(manifest['scripts'], undefined, 'the development scripts (which run files not shipped) are not published');
    assert.equal(manifest['devDependencies'], undefined);
    assert.equal(readFileSync(join(root, 'package.json'), 'utf8').includes('"scripts"'), true, "the repository's package.json got its scripts back after npm pack");
  });

  it('padlock/dashboard: imported as an ES module and required as CommonJS from the tarball, it serves the page and a held lock; its types compile under nodenext', { timeout: 120_000 }, async () => {
    const server = await startServer();
    const dir = join(work, 'ioredis5', 'dashboard-export');
    mkdirSync(dir);
    const body = (format: 'esm' | 'cjs'): string => `
const redis = new Redis(process.env.REDIS_URL);
const padlock = new Padlock({ redis, prefix: 'pkg-${format}' });
const lease = await padlock.mutex('export:${format}').acquire();
const dashboard = createDashboard({ redis, padlock });
const http = createServer(dashboard);
await new Promise((resolve) => http.listen(0, '127.0.0.1', resolve));
const base = 'http://127.0.0.1:' + http.address().port + '/';
const page = await (await fetch(base)).text();
const snapshot = await (await fetch(base + 'snapshot.json')).json();
console.log(JSON.stringify({ page: page.includes('<title>padlock dashboard</title>'), locks: snapshot.locks.map((l) => [l.name, l.fence === lease.fence]) }));
await dashboard.close();
http.close();
await lease.release();
await padlock.close();
await redis.quit();
`;
    writeFileSync(join(dir, 'esm.mjs'), `import { Redis } from 'ioredis';\nimport { createServer } from 'node:http';\nimport { Padlock } from 'padlock';\nimport { createDashboard } from 'padlock/dashboard';\n${body('esm')}`);
    writeFileSync(join(dir, 'cjs.cjs'), `const { Redis } = require('ioredis');\nconst { createServer } = require('node:http');\nconst { Padlock } = require('padlock');\nconst { createDashboard } = require('padlock/dashboard');\n(async () => {${body('cjs')}})();\n`);
    for (const [file, format] of [['esm.mjs', 'esm'], ['cjs.cjs', 'cjs']] as const) {
      const result = await run(process.execPath, [file], { cwd: dir, env: { REDIS_URL: server.url }, timeoutMs: EXIT_BOUND_MS });
      assert.ok(!result.timedOut && result.code === 0, show(`padlock/dashboard (${format})`, result));
      assert.equal(result.stderr, '', show(`padlock/dashboard (${format}) wrote to stderr; it`, result));
      assert.deepEqual(JSON.parse(result.stdout), { page: true, locks: [[`export:${format}`, true]] });
    }
    const resolved = await run(process.execPath, ['-e', "console.log(require.resolve('padlock/dashboard'))"], { cwd: dir, timeoutMs: EXIT_BOUND_MS });
    assert.ok(resolved.stdout.trim().endsWith('/node_modules/padlock/dist/cjs/dashboard/index.js'), resolved.stdout);

    writeFileSync(join(dir, 'package.json'), JSON.stringify({ private: true, type: 'module' }));
    writeFileSync(
      join(dir, 'check.ts'),
      `import type { IncomingMessage } from 'node:http';
import type { Redis } from 'ioredis';
import { createDashboard, type Dashboard, type DashboardSource, type Snapshot } from 'padlock/dashboard';
export function mount(redis: Redis, source: DashboardSource): Dashboard[] {
  const first: Snapshot | undefined = undefined;
  void first;
  return [createDashboard({ redis, allowRelease: true, authorize: (req: IncomingMessage) => { const user = req.headers['x-user']; return typeof user === 'string' ? user : false; } }), createDashboard({ source, basePath: '/locks' })];
}
// @ts-expect-error a dashboard needs a store
void createDashboard({ redis: 'redis://127.0.0.1:6379' });
`,
    );
    const compilerOptions = { strict: true, exactOptionalPropertyTypes: true, noUncheckedIndexedAccess: true, skipLibCheck: false, skipDefaultLibCheck: true, target: 'es2022', module: 'nodenext', moduleResolution: 'nodenext', types: ['node'], noEmit: true };
    writeFileSync(join(dir, 'tsconfig.json'), JSON.stringify({ compilerOptions, include: ['check.ts'] }));
    const compile = await run(process.execPath, [tsc, '-p', '.', '--pretty', 'false'], { cwd: dir, timeoutMs: 120_000 });
    assert.equal(compile.code, 0, `tsc of padlock/dashboard's types:\n${compile.stdout}${compile.stderr}`);
  });

  it("padlock/redlock and padlock/redis-semaphore: the peers' README snippets, ported by changing only the import, type-check under strict nodenext and run (ESM and CommonJS)", { timeout: 120_000 }, async () => {
    const server = await startServer();
    const dir = join(work, 'ioredis5', 'facades-port');
    mkdirSync(dir);
    writeFileSync(join(dir, 'package.json'), JSON.stringify({ private: true, type: 'module' }));
    // redlock's README (Configuration, Usage, Error Handling), its import line changed.
    writeFileSync(
      join(dir, 'redlock-port.ts'),
      `import { Redis } from 'ioredis';
import Redlock, { ResourceLockedError } from 'padlock/redlock';

const redisA = new Redis(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379');
const redlock = new Redlock([redisA], { driftFactor: 0.01, retryCount: 10, retryDelay: 200, retryJitter: 200, automaticExtensionThreshold: 500 });
redlock.on('error', (error) => {
  if (error instanceof ResourceLockedError) {
    return;
  }
  console.error(error);
});
const [senderId, recipientId] = ['sender', 'recipient'];
await redlock.using([senderId, recipientId], 5000, async (signal) => {
  if (signal.aborted) {
    throw signal.error;
  }
});
let lock = await redlock.acquire(['a'], 5000);
try {
  lock = await lock.extend(5000);
} finally {
  await lock.release();
}
console.log(JSON.stringify({ redlock: lock.fence > 0 }));
await redisA.quit();
`,
    );
    // redis-semaphore's README (Mutex, Semaphore), its import line changed.
    writeFileSync(
      join(dir, 'redis-semaphore-port.ts'),
      `import { Redis } from 'ioredis';
import { Mutex, Semaphore } from 'padlock/redis-semaphore';

const redisClient = new Redis(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379');

async function doSomething(): Promise<void> {
  const mutex = new Mutex(redisClient, 'lockingResource', { lockTimeout: 10_000, acquireTimeout: 2_000 });
  await mutex.acquire();
  try {
    // critical code
  } finally {
    await mutex.release();
  }
}

async function doSomethingLimited(): Promise<void> {
  const semaphore = new Semaphore(redisClient, 'lockingResource', 5);
  await semaphore.acquire();
  try {
    // maximum 5 simultaneously executions
  } finally {
    await semaphore.release();
  }
}

await doSomething();
await doSomethingLimited();
console.log(JSON.stringify({ redisSemaphore: true }));
await redisClient.quit();
`,
    );
    const compilerOptions = { strict: true, exactOptionalPropertyTypes: true, noUncheckedIndexedAccess: true, skipLibCheck: false, skipDefaultLibCheck: true, target: 'es2022', module: 'nodenext', moduleResolution: 'nodenext', types: ['node'], rootDir: '.', outDir: 'out', noEmitOnError: true };
    writeFileSync(join(dir, 'tsconfig.json'), JSON.stringify({ compilerOptions, include: ['*.ts'] }));
    const compile = await run(process.execPath, [tsc, '-p', '.', '--pretty', 'false'], { cwd: dir, timeoutMs: 120_000 });
    assert.equal(compile.code, 0, `tsc of the ported snippets:\n${compile.stdout}${compile.stderr}`);
    // CommonJS, as redlock's README says its CommonJS users write it.
    writeFileSync(
      join(dir, 'port.cjs'),
      `const { Redis } = require('ioredis');
const { default: Redlock } = require('padlock/redlock');
const { Mutex } = require('padlock/redis-semaphore');
(async () => {
  const redis = new Redis(process.env.REDIS_URL);
  const ran = await new Redlock([redis]).using(['cjs'], 5000, async () => 'ran');
  const mutex = new Mutex(redis, 'cjs');
  await mutex.acquire();
  await mutex.release();
  console.log(JSON.stringify({ cjs: ran }));
  await redis.quit();
})();
`,
    );
    for (const [file, expected] of [[join('out', 'redlock-port.js'), { redlock: true }], [join('out', 'redis-semaphore-port.js'), { redisSemaphore: true }], ['port.cjs', { cjs: 'ran' }]] as const) {
      const result = await run(process.execPath, [file], { cwd: dir, env: { REDIS_URL: server.url }, timeoutMs: EXIT_BOUND_MS });
      assert.ok(!result.timedOut && result.code === 0, show(file, result));
      assert.equal(result.stderr, '', show(`${file} wrote to stderr; it`, result));
      assert.deepEqual(JSON.parse(result.stdout), expected);
    }
  });

  it('the padlock bin from the tarball runs the demo and exits by itself', { timeout: 120_000 }, async () => {
    const server = await startServer();
    const dir = join(work, 'ioredis5');
    const demo = await run(join(dir, 'node_modules', '.bin', 'padlock'), ['demo', '--url', server.url, '--sellers', '1', '--tickets', '3'], { cwd: dir, timeoutMs: 90_000 });
    assert.equal(demo.code, 0, show('padlock demo', demo));
    assert.match(demo.stdout, /^padlock demo: 1 seller process sells 3 tickets, on redis /m);
    assert.match(demo.stdout, /Without a lock, 1 seller sold 3 tickets for 3 seats/);
  });
});
