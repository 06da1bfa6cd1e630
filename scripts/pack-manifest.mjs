// The package.json that ships: without the development scripts, which run files the package does
// not ship (scripts/, test/, bench/). `trim` (prepack) keeps the whole file aside and writes the
// published one; `restore` (postpack) puts the whole file back. A trim finding a file kept aside
// (a pack that stopped half-way) restores it first, so the working copy is never lost.
// Every change replaces the file in one rename: a Node process starting meanwhile in this folder
// reads package.json (its "type"), and a file caught half-written crashed one (the tests pack
// while other test files start).
import { existsSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { replaceFile } from './replace-file.mjs';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const manifest = join(root, 'package.json');
const kept = join(root, 'package.json.development');

const action = process.argv[2];
if (action === 'trim') {
  if (existsSync(kept)) renameSync(kept, manifest);
  const text = readFileSync(manifest, 'utf8');
  const pkg = JSON.parse(text);
  writeFileSync(kept, text);
  delete pkg.scripts;
  delete pkg.devDependencies;
  replaceFile(manifest, `${JSON.stringify(pkg, null, 2)}\n`);
} else if (action === 'restore') {
  if (existsSync(kept)) renameSync(kept, manifest);
} else {
  console.error('usage: node scripts/pack-manifest.mjs trim|restore');
  process.exit(2);
}
