// Builds what the package ships, from a clean dist/ (so no file of a deleted module is packed):
//   dist/        ESM (and the `padlock` bin), from tsconfig.build.json
//   dist/cjs/    CommonJS, from tsconfig.cjs.json: the library only, for `require('padlock')` and
//                `require('padlock/dashboard')`, `require('padlock/redlock')`, `require('padlock/redis-semaphore')`
// Each build has its own .d.ts files: dist/cjs/package.json says "type": "commonjs", so Node and
// TypeScript read everything under dist/cjs as CommonJS, and everything else under dist as ESM.
// Then what users do not run is taken out: the ESM build's copy of the embedded Lua (it re-exports
// the CommonJS build's, which an ES module can import: the ~200 KB of scripts ship once), and the
// declarations of the `padlock` bin (nobody imports it). The TypeScript sources are not shipped
// either (package.json "files"): the compiled code and its declarations are what users run and read.
import { spawnSync } from 'node:child_process';
import { readdirSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');

// No source maps and no declaration maps: they point at sources the package does not ship.
function compile(project) {
  const result = spawnSync(process.execPath, [tsc, '-p', project, '--sourceMap', 'false', '--declarationMap', 'false'], { cwd: root, stdio: 'inherit' });
  if (result.status !== 0) process.exit(result.status ?? 1);
}

rmSync(join(root, 'dist'), { recursive: true, force: true });
compile('tsconfig.build.json');
compile('tsconfig.cjs.json');
writeFileSync(join(root, 'dist', 'cjs', 'package.json'), `${JSON.stringify({ type: 'commonjs' }, null, 2)}\n`);

writeFileSync(join(root, 'dist', 'stores', 'redis', 'scripts', 'embedded.js'), "// The scripts ship once, in the CommonJS build.\nexport { luaSources } from '../../../cjs/stores/redis/scripts/embedded.js';\n");
for (const file of readdirSync(join(root, 'dist', 'cli'))) {
  if (file.endsWith('.d.ts')) rmSync(join(root, 'dist', 'cli', file));
}
