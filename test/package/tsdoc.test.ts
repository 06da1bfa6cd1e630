/**
 * Every member of padlock's public surface has TSDoc: each name exported from src/index.ts (and
 * src/dashboard/index.ts, `padlock/dashboard`; src/facades/redlock.ts and redis-semaphore.ts, the
 * facades), and
 * each property, method, constructor and accessor of the types and classes it names (what an
 * editor shows a user on hover), except what is `@internal` (stripped from the published
 * declarations). Read with the TypeScript compiler from the sources, as the declarations are made.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import ts from 'typescript';
import { fileURLToPath } from 'node:url';

/** The repository: this file runs as build/test/package/tsdoc.test.js. */
const root = fileURLToPath(new URL('../../../', import.meta.url));

/** Whether `declaration` has a doc comment (or is `@internal`, and so not published). */
function documented(declaration: ts.Declaration): { has: boolean; internal: boolean } {
  const docs = ts.getJSDocCommentsAndTags(declaration);
  const internal = ts.getJSDocTags(declaration).some((tag) => tag.tagName.text === 'internal');
  // A private (#) or `private` member is not public surface.
  return { has: docs.length > 0, internal };
}

function isPrivate(declaration: ts.Declaration): boolean {
  if (ts.isPrivateIdentifier((declaration as { name?: ts.Node }).name ?? declaration)) return true;
  const modifiers = ts.canHaveModifiers(declaration) ? (ts.getModifiers(declaration) ?? []) : [];
  return modifiers.some((m) => m.kind === ts.SyntaxKind.PrivateKeyword || m.kind === ts.SyntaxKind.ProtectedKeyword);
}

/** `Name.member` for each undocumented public member of the surface of one entry point (`src/index.ts`: `padlock`). */
function undocumented(entry = `${root}src/index.ts`): string[] {
  const program = ts.createProgram([entry], { module: ts.ModuleKind.NodeNext, moduleResolution: ts.ModuleResolutionKind.NodeNext, target: ts.ScriptTarget.ES2022, strict: true, noEmit: true });
  const checker = program.getTypeChecker();
  const source = program.getSourceFile(entry);
  assert.ok(source !== undefined);
  const moduleSymbol = checker.getSymbolAtLocation(source);
  assert.ok(moduleSymbol !== undefined);
  const missing: string[] = [];
  const seen = new Set<ts.Declaration>();
  const check = (label: string, declaration: ts.Declaration): boolean => {
    if (seen.has(declaration)) return false;
    seen.add(declaration);
    const { has, internal } = documented(declaration);
    if (internal || isPrivate(declaration)) return false;
    if (!has) missing.push(label);
    return true;
  };
  for (const exported of checker.getExportsOfModule(moduleSymbol)) {
    const symbol = exported.flags & ts.SymbolFlags.Alias ? checker.getAliasedSymbol(exported) : exported;
    for (const declaration of symbol.declarations ?? []) {
      if (!check(exported.name, declaration)) continue;
      // The members it declares itself (inherited ones are checked where they are declared, if exported).
      const members: ts.Node[] = ts.isClassDeclaration(declaration) || ts.isInterfaceDeclaration(declaration) ? [...declaration.members] : ts.isTypeAliasDeclaration(declaration) && ts.isTypeLiteralNode(declaration.type) ? [...declaration.type.members] : [];
      for (const member of members) {
        if (ts.isIndexSignatureDeclaration(member) || ts.isClassStaticBlockDeclaration(member) || ts.isSemicolonClassElement(member)) continue;
        const name = ts.isConstructorDeclaration(member) ? 'constructor' : (member as ts.NamedDeclaration).name?.getText() ?? '?';
        // Overloads: the implementation of an overloaded method is not what users see.
        if ((ts.isMethodDeclaration(member) || ts.isConstructorDeclaration(member)) && member.body !== undefined && members.some((m) => m !== member && m.kind === member.kind && (m as ts.NamedDeclaration).name?.getText() === (member as ts.NamedDeclaration).name?.getText() && (m as ts.MethodDeclaration).body === undefined)) continue;
        check(`${exported.name}.${name}`, member as ts.Declaration);
      }
    }
  }
  return missing;
}

describe('the published types', () => {
  it('document every public member (TSDoc)', () => {
    assert.deepEqual(undocumented(), []);
  });

  it('document every public member of padlock/dashboard (TSDoc)', () => {
    assert.deepEqual(undocumented(`${root}src/dashboard/index.ts`), []);
  });

  it('document every public member of padlock/redlock and padlock/redis-semaphore (TSDoc)', () => {
    assert.deepEqual([...undocumented(`${root}src/facades/redlock.ts`), ...undocumented(`${root}src/facades/redis-semaphore.ts`)], []);
  });
});
