// No two modules of src/ export the same name: a name means one thing, and a
// reader who finds it imported knows which module it comes from without
// looking. Each module's own exports are read with the TypeScript parser
// (declarations and `export { … }` of its own names); a re-export of another
// module's name is that module's, not a second one.
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

const SRC = join(import.meta.dirname, '../../src');

function modules(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return modules(path);
    return entry.name.endsWith('.ts') && !entry.name.endsWith('.d.ts') ? [path] : [];
  });
}

function hasExportModifier(node: ts.Node): boolean {
  return ts.canHaveModifiers(node) && (ts.getModifiers(node) ?? []).some((modifier) => modifier.kind === ts.SyntaxKind.ExportKeyword);
}

/** The names a module itself declares and exports (`export default` is no name). */
function ownExports(text: string): string[] {
  const source = ts.createSourceFile('module.ts', text, ts.ScriptTarget.Latest, false, ts.ScriptKind.TS);
  const names: string[] = [];
  for (const statement of source.statements) {
    if (ts.isExportDeclaration(statement)) {
      // `export { x } from './y'` hands on y's name; `export { x as y }` of a local names y here.
      if (statement.moduleSpecifier === undefined && statement.exportClause !== undefined && ts.isNamedExports(statement.exportClause)) {
        for (const element of statement.exportClause.elements) names.push(element.name.text);
      }
      continue;
    }
    if (!hasExportModifier(statement)) continue;
    if (ts.isVariableStatement(statement)) {
      for (const declaration of statement.declarationList.declarations) if (ts.isIdentifier(declaration.name)) names.push(declaration.name.text);
    } else if (
      (ts.isFunctionDeclaration(statement) ||
        ts.isClassDeclaration(statement) ||
        ts.isInterfaceDeclaration(statement) ||
        ts.isTypeAliasDeclaration(statement) ||
        ts.isEnumDeclaration(statement)) &&
      statement.name !== undefined
    ) {
      names.push(statement.name.text);
    }
  }
  return [...new Set(names)];
}

/** Each name exported by more than one module of `dir`, with those modules (paths relative to `dir`). */
function sharedExports(dir: string): Record<string, string[]> {
  const owners = new Map<string, string[]>();
  for (const path of modules(dir)) {
    for (const name of ownExports(readFileSync(path, 'utf8'))) owners.set(name, [...(owners.get(name) ?? []), relative(dir, path)]);
  }
  return Object.fromEntries([...owners].filter(([, paths]) => paths.length > 1).sort(([a], [b]) => a.localeCompare(b)));
}

describe('exported names', () => {
  it('reads declarations and local export lists, not re-exports or defaults', () => {
    const text = [
      'export const a = 1, b = 2;',
      'export function f() {}',
      'export class C {}',
      'export interface I {}',
      'export type T = string;',
      'export enum E { X }',
      'const local = 1;',
      'export { local as renamed };',
      "export { other } from './other.js';",
      'export default 3;',
      'function hidden() {}',
    ].join('\n');
    expect(ownExports(text)).toEqual(['a', 'b', 'f', 'C', 'I', 'T', 'E', 'renamed']);
  });

  it('no two modules of src/ export the same name', () => {
    expect(sharedExports(SRC)).toEqual({});
  });
});
