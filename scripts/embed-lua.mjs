// Embeds src/stores/redis/scripts/*.lua into src/stores/redis/scripts/embedded.ts at build time. Each script gets, after its
// header comment, the helper definitions (the `local function`s and `local` constants of
// src/stores/redis/scripts/_*.lua) it uses, and the ones those use, dependencies first: a script carries only
// what it calls. Redis runs a script's whole chunk on every call, so each definition it carries is
// a closure made, and collected, per call: a script with a fast path for its common case marks,
// with a line `-- @helpers`, where the definitions its fast path above does not use go, so that a
// call the fast path answers never makes them (the ones the fast path uses go before it). The
// output is generated, not committed.
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { replaceFile } from './replace-file.mjs';

const dir = join(dirname(fileURLToPath(import.meta.url)), '..', 'src', 'stores', 'redis', 'scripts');
const files = readdirSync(dir).filter((f) => f.endsWith('.lua')).sort();

/** A top-level definition line of a helper file: a local function, or a local constant. */
const definition = /^local (?:function (\w+)\(|(\w+) = )/;

/**
 * The definitions of one helper file, each with the comment lines just above it (a file's opening
 * comment goes with its first definition).
 */
function definitionsOf(file, text) {
  const units = [];
  let pending = [];
  let current;
  for (const line of text.split('\n')) {
    const match = definition.exec(line);
    if (match) {
      current = { file, name: match[1] ?? match[2], isFunction: match[1] !== undefined, lines: [...pending, line] };
      units.push(current);
      pending = [];
    } else if (line.startsWith('--') || line.trim() === '') {
      pending.push(line);
    } else if (current) {
      current.lines.push(...pending, line);
      pending = [];
    } else {
      throw new Error(`${file}: a helper file holds only local functions and local constants, found: ${line}`);
    }
  }
  if (units.length === 0) throw new Error(`${file}: a helper file must define at least one local function`);
  return units.map((u) => ({ ...u, text: `${u.lines.join('\n').replace(/\n+$/, '')}\n` }));
}

const helpers = files.filter((f) => f.startsWith('_')).flatMap((file) => definitionsOf(file, readFileSync(join(dir, file), 'utf8')));
const names = new Set();
for (const h of helpers) {
  if (names.has(h.name)) throw new Error(`${h.file}: ${h.name} is defined by two helpers`);
  names.add(h.name);
}

/** Whether `text` (code outside `unit`'s own definition line) uses `unit`: calls the function, or reads the constant. */
function uses(text, unit) {
  const code = text.replace(/--.*$/gm, '');
  if (unit.isFunction) return new RegExp(`(^|[^\\w.:])${unit.name}\\(`, 'm').test(code.replaceAll(`local function ${unit.name}(`, ''));
  return new RegExp(`(^|[^\\w.:])${unit.name}\\b`, 'm').test(code.replace(`local ${unit.name} = `, ''));
}

/** The definitions `text` needs, each after the ones it needs itself. */
function definitionsFor(text, included = [], visiting = new Set()) {
  for (const unit of helpers) {
    if (included.includes(unit) || visiting.has(unit) || !uses(text, unit)) continue;
    visiting.add(unit);
    definitionsFor(unit.text, included, visiting);
    included.push(unit);
  }
  return included;
}

/** The line of a script after which the helpers its fast path (above it) does not use are defined. */
const HELPERS_MARKER = '-- @helpers\n';

/**
 * What is sent to Redis (and shipped): the script without its header and whole-line comments, which
 * the .lua files keep for readers, under one line naming it (seen in SLOWLOG and SCRIPT debugging).
 * Half of the package's weight was these comments. A script has one block comment, its header.
 */
function compact(file, source) {
  const body = source.slice(source.indexOf(']]\n') + 3);
  const lines = body.split('\n').filter((line) => line.trim() !== '' && !/^\s*--/.test(line));
  return `-- padlock ${file}\n${lines.join('\n')}\n`;
}

const entries = [];
for (const file of files.filter((f) => !f.startsWith('_'))) {
  const text = readFileSync(join(dir, file), 'utf8');
  const end = text.indexOf(']]\n');
  if (!text.startsWith('--[[') || end < 0) throw new Error(`${file}: a script must start with a --[[ ... ]] header`);
  const body = text.slice(end + 3);
  const marker = body.indexOf(HELPERS_MARKER);
  let source;
  if (marker < 0) {
    source = text.slice(0, end + 3) + definitionsFor(body).map((u) => u.text).join('') + body;
  } else {
    const fast = body.slice(0, marker);
    const rest = body.slice(marker + HELPERS_MARKER.length);
    const early = definitionsFor(fast);
    const late = definitionsFor(rest, [...early]).slice(early.length);
    source = text.slice(0, end + 3) + early.map((u) => u.text).join('') + fast + late.map((u) => u.text).join('') + rest;
  }
  const id = file.replace(/\.lua$/, '').replace(/-([a-z])/g, (_, c) => c.toUpperCase());
  entries.push(`  ${id}: ${JSON.stringify(compact(file, source))},`);
}
// Typed by name, not by content: `as const` would copy every script into the .d.ts as a string type.
const ids = entries.map((entry) => entry.trim().split(':', 1)[0]);
const out =
  `// Generated by scripts/embed-lua.mjs from src/stores/redis/scripts/*.lua. Do not edit.\n` +
  `/** The name of each script padlock runs. */\nexport type LuaScriptName = ${ids.map((id) => `'${id}'`).join(' | ')};\n\n` +
  `/** Each script's source, its helpers included. */\nexport const luaSources: { readonly [Name in LuaScriptName]: string } = {\n${entries.join('\n')}\n};\n`;
// Written only when it changed, and then whole (a rename): `npm pack` runs this while other test
// files may be reading the sources (the TSDoc test compiles them).
const target = join(dir, 'embedded.ts');
if (!existsSync(target) || readFileSync(target, 'utf8') !== out) replaceFile(target, out);
