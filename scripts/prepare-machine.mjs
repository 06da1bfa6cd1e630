// Runs before `npm test` and `npm run demo`: makes a fresh machine ready for them.
// Installs the npm dependencies when node_modules is missing, and redis-server, redis-cli
// (redis-tools: it creates the test Cluster), redis-sentinel, tmux (the CLI's terminal tests)
// and chromium (the dashboard's browser tests), and for the tests only, zookeeper with a Java
// runtime, etcd-server (the consensus stores' tests) and postgresql (the PostgreSQL store's), from Debian's packages when they are missing and this is a root shell with apt-get; otherwise
// says what to do.
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync } from 'node:fs';

function has(command) {
  if (command.startsWith('/')) return existsSync(command);
  return spawnSync('sh', ['-c', `command -v ${command}`], { stdio: 'ignore' }).status === 0;
}

/** Debian's `postgres` binary (under /usr/lib/postgresql/<version>/bin), or where it would be. */
function postgresBinary() {
  const root = '/usr/lib/postgresql';
  const versions = existsSync(root) ? readdirSync(root).filter((v) => existsSync(`${root}/${v}/bin/postgres`)) : [];
  return versions.length > 0 ? `${root}/${versions[0]}/bin/postgres` : `${root}/15/bin/postgres`;
}

// `npm test` (not `npm run demo`, which needs Redis only) also needs the consensus stores.
const testing = process.env.npm_lifecycle_event === 'pretest';

function run(command, args) {
  console.log(`prepare: ${command} ${args.join(' ')}`);
  const result = spawnSync(command, args, { stdio: 'inherit', env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' } });
  if (result.status !== 0) process.exit(result.status ?? 1);
}

if (!existsSync('node_modules/typescript')) run('npm', ['ci', '--no-audit', '--no-fund']);

// [command, Debian package, indispensable]: without redis-sentinel the Sentinel tests run
// `redis-server --sentinel`, the same program.
const needed = [
  ['redis-server', 'redis-server', true],
  ['redis-cli', 'redis-tools', true],
  ['redis-sentinel', 'redis-sentinel', false],
  // The CLI's `watch` and `release` prompt are tested in a real terminal; without tmux those tests skip.
  ['tmux', 'tmux', false],
  // The dashboard is tested in a real browser (playwright-core drives Debian's chromium; it downloads
  // none); without it those tests skip.
  ['chromium', 'chromium', false],
  // ZooKeeper (run from Debian's jar with a Java runtime) and etcd: the consensus stores' tests.
  ...(testing
    ? [
        ['/usr/share/java/zookeeper.jar', 'zookeeper', true],
        ['java', 'default-jre-headless', true],
        ['etcd', 'etcd-server', true],
        // The PostgreSQL store's tests start private servers from Debian's binaries (any version).
        [postgresBinary(), 'postgresql', true],
      ]
    : []),
].filter(([command]) => !has(command));
if (needed.length > 0) {
  const packages = needed.map(([, name]) => name);
  if (process.getuid?.() === 0 && has('apt-get')) {
    run('apt-get', ['update', '-qq']);
    run('apt-get', ['install', '-y', '-qq', ...packages]);
  } else {
    const missing = needed.map(([command]) => command).join(', ');
    console.error(`prepare: not installed: ${missing}. On Debian or Ubuntu: sudo apt-get install ${packages.join(' ')}`);
    if (needed.some(([, , indispensable]) => indispensable)) process.exit(1);
  }
}
