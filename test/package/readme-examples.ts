/**
 * The code examples of README.md and of the docs pages its sections moved to (docs/api.md,
 * docs/production.md), as the package test compiles and runs them. Each ```ts or ```js block of
 * those files must follow a tag, so that a new example cannot escape the test:
 *
 *     <!-- example: NAME [FLAG ...] -->
 *
 * Flags:
 * - `fragment`: a snippet that uses `redis` and `padlock` as the Quick start makes them; the test
 *   wraps it in that set-up (and closes both after it), as the README says.
 * - `commonjs`: a CommonJS program in plain JavaScript, run as written by CommonJS JavaScript projects.
 * - `js-needs-node-24`: uses syntax plain JavaScript has only from Node 24 (`await using`): before
 *   that, its plain-JavaScript run must fail with a SyntaxError, as the README says.
 * - `otel`: uses the OpenTelemetry SDK (`@opentelemetry/sdk-metrics`): runs only in projects that
 *   have it installed. The others have no `@opentelemetry` package at all, so every other example
 *   shows that padlock neither needs it nor mentions it there.
 *
 * Every other example is a complete ES module program in TypeScript. CommonJS projects get it with
 * its top-level code in an async function (CommonJS has no top-level `await`), and plain-JavaScript
 * projects get it with the types stripped (and, for CommonJS, `import` turned into `require`).
 */
import ts from 'typescript';

/** A tagged code block of the README. */
export interface Example {
  /** The Markdown file it is in, relative to the repository (for messages). */
  readonly file: string;
  readonly name: string;
  readonly lang: 'ts' | 'js';
  readonly flags: ReadonlySet<Flag>;
  readonly code: string;
  /** 1-based line of the opening fence, for messages. */
  readonly line: number;
}

const FLAGS = ['fragment', 'commonjs', 'js-needs-node-24', 'otel'] as const;
type Flag = (typeof FLAGS)[number];

/** How a project runs its code. */
export interface Target {
  /** Plain JavaScript (types stripped) or TypeScript (compiled by the project's tsc settings). */
  readonly language: 'js' | 'ts';
  /** The module system the emitted code runs in. */
  readonly format: 'esm' | 'cjs';
  /** Whether the project has `@opentelemetry/api` and `@opentelemetry/sdk-metrics` installed. */
  readonly otel?: boolean;
}

const TAG = /^<!--\s*example:\s*([a-z0-9-]+)((?:\s+[a-z0-9-]+)*)\s*-->$/;
const FENCE = /^```([a-z]*)\s*$/;

/** Parses the examples of one Markdown file; throws when a ts/js block has no tag or a tag is malformed. */
export function parseExamples(markdown: string, file = 'README.md'): Example[] {
  const lines = markdown.split('\n');
  const examples: Example[] = [];
  const names = new Set<string>();
  for (let i = 0; i < lines.length; i++) {
    const open = FENCE.exec(lines[i] ?? '');
    if (open === null) continue;
    const end = lines.findIndex((line, j) => j > i && line.startsWith('```'));
    if (end < 0) throw new Error(`${file}:${i + 1}: unclosed code block`);
    const lang = open[1] ?? '';
    if (['ts', 'typescript', 'js', 'javascript'].includes(lang)) {
      // The tag is the nearest non-blank line above the fence.
      let k = i - 1;
      while (k >= 0 && (lines[k] ?? '').trim() === '') k--;
      const tag = TAG.exec((lines[k] ?? '').trim());
      if (tag === null) {
        throw new Error(`${file}:${i + 1}: a \`\`\`${lang} block needs a tag line above it, <!-- example: NAME [${FLAGS.join(' | ')}] -->, so the package test runs it`);
      }
      const name = tag[1] ?? '';
      const flags = new Set<Flag>();
      for (const flag of (tag[2] ?? '').trim().split(/\s+/).filter((f) => f !== '')) {
        if (!(FLAGS as readonly string[]).includes(flag)) throw new Error(`${file}:${k + 1}: unknown example flag '${flag}' (known: ${FLAGS.join(', ')})`);
        flags.add(flag as Flag);
      }
      if (names.has(name)) throw new Error(`${file}:${k + 1}: two examples are named '${name}'`);
      names.add(name);
      const isJs = lang === 'js' || lang === 'javascript';
      if (flags.has('commonjs') !== isJs) throw new Error(`${file}:${i + 1}: '${name}': a \`\`\`js block must be tagged commonjs, and only it`);
      examples.push({ file, name, lang: isJs ? 'js' : 'ts', flags, code: lines.slice(i + 1, end).join('\n'), line: i + 1 });
    }
    i = end;
  }
  return examples;
}

/** Whether a project of this target runs the example at all. */
export function runsIn(example: Example, target: Target): boolean {
  if (example.flags.has('otel') && target.otel !== true) return false;
  // A CommonJS JavaScript program is meant for plain CommonJS projects only.
  if (example.flags.has('commonjs')) return target.language === 'js' && target.format === 'cjs';
  return true;
}

/**
 * The Redis client package the example uses (`ioredis` or `redis`), from its imports: a project
 * runs the examples of the client it has installed. A fragment uses the Quick start's ioredis.
 */
export function clientOf(example: Example): string {
  if (example.flags.has('fragment')) return 'ioredis';
  const uses = ['ioredis', 'redis', 'iovalkey'].filter((name) => new RegExp(`from '${name}'|require\\('${name}'\\)`).test(example.code));
  if (uses.length !== 1) throw new Error(`${example.file}:${example.line}: '${example.name}' must use exactly one Redis client package, uses ${uses.length === 0 ? 'none' : uses.join(', ')}`);
  return uses[0] ?? '';
}

/**
 * Whether the example's run must fail with a SyntaxError rather than succeed: `await using` in plain
 * JavaScript before Node 24.
 */
export function expectsSyntaxError(example: Example, target: Target, nodeMajor: number): boolean {
  return example.flags.has('js-needs-node-24') && target.language === 'js' && nodeMajor < 24;
}

/** The set-up a `fragment` runs in: the Quick start's first lines, and closing both at the end. */
const FRAGMENT_IMPORTS = ["import { Padlock } from 'padlock';", "import { Redis } from 'ioredis';"];
const FRAGMENT_BEFORE = "const redis = new Redis(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379');\nconst padlock = new Padlock({ redis });\ntry {";
const FRAGMENT_AFTER = '} finally {\n  await padlock.close();\n  redis.disconnect();\n}';

const IMPORT = /^import\s+(type\s+)?\{([^}]*)\}\s+from\s+'([^']+)';$/;

/** Splits leading `import { ... } from '...';` lines from the rest; other import forms are refused. */
function splitImports(example: Example): { imports: Map<string, string[]>; body: string } {
  const lines = example.code.split('\n');
  const imports = new Map<string, string[]>();
  let i = 0;
  for (; i < lines.length; i++) {
    const line = (lines[i] ?? '').trim();
    if (line === '') continue;
    if (!line.startsWith('import ')) break;
    const match = IMPORT.exec(line);
    if (match === null) throw new Error(`${example.file} '${example.name}': write imports as one-line named imports, got: ${line}`);
    const names = (match[2] ?? '').split(',').map((n) => n.trim()).filter((n) => n !== '').map((n) => (match[1] === undefined ? n : `type ${n}`));
    imports.set(match[3] ?? '', [...(imports.get(match[3] ?? '') ?? []), ...names]);
  }
  return { imports, body: lines.slice(i).join('\n') };
}

function importLines(imports: Map<string, string[]>): string {
  return [...imports].map(([from, names]) => `import { ${[...new Set(names)].join(', ')} } from '${from}';`).join('\n');
}

function indent(code: string): string {
  return code
    .split('\n')
    .map((line) => (line === '' ? line : `  ${line}`))
    .join('\n');
}

/**
 * The source file a project of `target` compiles (TypeScript) or runs (JavaScript) for `example`.
 */
export function sourceFor(example: Example, target: Target): string {
  if (example.lang === 'js') return `${example.code}\n`;
  const { imports, body: own } = splitImports(example);
  let body = own.trim();
  if (example.flags.has('fragment')) {
    for (const line of FRAGMENT_IMPORTS) {
      const match = IMPORT.exec(line);
      if (match?.[2] !== undefined && match[3] !== undefined) imports.set(match[3], [...(imports.get(match[3]) ?? []), match[2].trim()]);
    }
    body = `${FRAGMENT_BEFORE}\n${indent(body)}\n${FRAGMENT_AFTER}`;
  }
  if (target.format === 'cjs') {
    // CommonJS has no top-level await: the code goes in an async function, as the README says.
    body = `async function main(): Promise<void> {\n${indent(body)}\n}\n\nmain().catch((error: unknown) => {\n  console.error(error);\n  process.exitCode = 1;\n});`;
  }
  const source = `${importLines(imports)}\n\n${body}\n`;
  if (target.language === 'ts') return source;
  // Plain JavaScript: the same code without its types. target ESNext keeps every other syntax as
  // written, `await using` included.
  const js = ts.transpileModule(source, { compilerOptions: { target: ts.ScriptTarget.ESNext, module: ts.ModuleKind.ESNext }, reportDiagnostics: false }).outputText;
  if (target.format === 'esm') return js;
  return js.replace(/^import \{([^}]*)\} from '([^']+)';$/gm, (_, names: string, from: string) => `const {${names}} = require('${from}');`);
}
