// Runs before `npm test` and `npm run demo`: makes a fresh machine ready for them.
// Installs the npm dependencies when node_modules is missing, and redis-server from Debian's
// packages when it is missing and this is a root shell with apt-get; otherwise says what to do.
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';

function has(command) {
  return spawnSync('sh', ['-c', `command -v ${command}`], { stdio: 'ignore' }).status === 0;
}

function run(command, args) {
  console.log(`prepare: ${command} ${args.join(' ')}`);
  const result = spawnSync(command, args, { stdio: 'inherit', env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' } });
  if (result.status !== 0) process.exit(result.status ?? 1);
}

if (!existsSync('node_modules/typescript')) run('npm', ['ci', '--no-audit', '--no-fund']);

if (!has('redis-server')) {
  if (process.getuid?.() === 0 && has('apt-get')) {
    run('apt-get', ['update', '-qq']);
    run('apt-get', ['install', '-y', '-qq', 'redis-server']);
  } else {
    console.error('prepare: redis-server is not installed. On Debian or Ubuntu: sudo apt-get install redis-server');
    process.exit(1);
  }
}
