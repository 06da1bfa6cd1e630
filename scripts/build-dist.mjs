// Builds what the package ships, from a clean dist/ (so no file of a deleted module is packed):
//   dist/cjs/    the library, compiled once, as CommonJS (tsconfig.cjs.json): what `require('padlock')`,
//                `require('padlock/dashboard')`, `require('padlock/redlock')` and
//                `require('padlock/redis-semaphore')` load, with its declarations
//   dist/        ES module entry points that re-export the CommonJS build (so one process has one copy
//                of padlock, whichever way it is loaded: its errors pass `instanceof` across both),
//                each with a declaration file re-exporting the CommonJS declarations; and the
//                `padlock` bin, an ES module (tsconfig.build.json) whose imports of the library point
//                into dist/cjs
// dist/cjs/package.json says "type": "commonjs", so Node and TypeScript read everything under dist/cjs
// as CommonJS, and everything else under dist as ESM. Declarations no entry point reaches (the
// stores' internals) are not shipped, nor are the bin's; nor are the TypeScript sources (package.json
// "files"): the compiled code and its declarations are what users run and read.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join, dirname, relative, resolve } from 'node:path';
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

const dist = join(root, 'dist');
const cjs = join(dist, 'cjs');

/** Every file under `dir`, as absolute paths. */
function filesUnder(dir) {
  return readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((entry) => entry.isFile())
    .map((entry) => join(entry.parentPath, entry.name));
}

// The ES module build keeps only the bin (dist/cli): the library is the CommonJS build's.
for (const file of filesUnder(dist)) {
  if (!file.startsWith(cjs + '/') && !file.startsWith(join(dist, 'cli') + '/')) rmSync(file);
}
for (const file of filesUnder(join(dist, 'cli'))) {
  if (file.endsWith('.d.ts')) {
    rmSync(file);
    continue;
  }
  // The bin's imports of the library (`../lock-state.js`) go to the CommonJS build (`../cjs/lock-state.js`).
  const code = readFileSync(file, 'utf8').replace(/(from |import\()'(\.\.\/[^']+)'/g, (_, how, path) => {
    const target = resolve(dirname(file), path);
    if (target.startsWith(join(dist, 'cli') + '/')) return `${how}'${path}'`;
    const into = relative(dirname(file), join(cjs, relative(dist, target)));
    if (!existsSync(join(cjs, relative(dist, target)))) throw new Error(`the bin imports ${path}, which the CommonJS build lacks: add it to tsconfig.cjs.json`);
    return `${how}'${into}'`;
  });
  writeFileSync(file, code);
}

// Folders the ES module build no longer has anything in.
for (const entry of readdirSync(dist, { withFileTypes: true })) {
  if (entry.isDirectory() && entry.name !== 'cjs' && filesUnder(join(dist, entry.name)).length === 0) rmSync(join(dist, entry.name), { recursive: true });
}

// The ES module entry points: each re-exports its CommonJS module, and so do its declarations.
const entries = [
  ['index', []],
  ['dashboard/index', []],
  ['facades/redis-semaphore', []],
  ['facades/redlock', ['Redlock']],
];
for (const [entry, defaultOf] of entries) {
  const target = `${relative(dirname(join(dist, entry)), join(cjs, entry)) || '.'}.js`.replace(/^(?!\.)/, './');
  mkdirSync(dirname(join(dist, entry)), { recursive: true });
  const lines = [`export * from '${target}';`, ...defaultOf.map((name) => `export { ${name} as default } from '${target}';`)];
  writeFileSync(join(dist, `${entry}.js`), `${lines.join('\n')}\n`);
  writeFileSync(join(dist, `${entry}.d.ts`), `${lines.join('\n')}\n`);
}

// Declarations no entry point reaches are left out: a user's compiler reads only what the entry points import.
const reached = new Set();
const pending = entries.map(([entry]) => join(cjs, `${entry}.d.ts`));
while (pending.length > 0) {
  const file = pending.pop();
  if (reached.has(file) || !existsSync(file)) continue;
  reached.add(file);
  // tsc writes `from '…'` with single quotes and an inline `import("…")` type with double ones.
  for (const match of readFileSync(file, 'utf8').matchAll(/(?:from\s+|import\s*\(\s*)(['"])(\.[^'"]+)\1/g)) {
    pending.push(resolve(dirname(file), match[2].replace(/\.js$/, '.d.ts')));
  }
}
for (const file of filesUnder(cjs)) {
  if (file.endsWith('.d.ts') && !reached.has(file)) rmSync(file);
}
