// Builds what the package ships, from a clean dist/ (so no file of a deleted module is packed):
//   dist/        ESM (and the `padlock` bin), from tsconfig.build.json
//   dist/cjs/    CommonJS, from tsconfig.cjs.json: the library only, for `require('padlock')`
// Each build has its own .d.ts files: dist/cjs/package.json says "type": "commonjs", so Node and
// TypeScript read everything under dist/cjs as CommonJS, and everything else under dist as ESM.
import { spawnSync } from 'node:child_process';
import { rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');

function compile(project) {
  const result = spawnSync(process.execPath, [tsc, '-p', project], { cwd: root, stdio: 'inherit' });
  if (result.status !== 0) process.exit(result.status ?? 1);
}

rmSync(join(root, 'dist'), { recursive: true, force: true });
compile('tsconfig.build.json');
compile('tsconfig.cjs.json');
writeFileSync(join(root, 'dist', 'cjs', 'package.json'), `${JSON.stringify({ type: 'commonjs' }, null, 2)}\n`);
