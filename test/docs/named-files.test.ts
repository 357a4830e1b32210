// The documentation names only source files that exist: every `something.ts`, `.mjs` or `.cjs` that
// README.md, CONTRIBUTING.md or a page under docs/ mentions (in prose, code spans or diagrams) is a
// file of the repository. A name with a folder is read from the repository's root, from src/ or
// test/, or from inside one of src/'s folders (a table row about `proxy/` writes `engines/…`); a bare
// name matches any file of that name. Globs and URLs are not names.
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const NOT_THE_REPOSITORY = new Set(['node_modules', '.git', 'dist', 'coverage']);

function filesUnder(folder: string): string[] {
  return readdirSync(folder, { withFileTypes: true }).flatMap((entry) => {
    if (NOT_THE_REPOSITORY.has(entry.name)) return [];
    const path = join(folder, entry.name);
    return entry.isDirectory() ? filesUnder(path) : [relative(ROOT, path).split('\\').join('/')];
  });
}

/** A source file's name: not part of a longer path, a glob (`*.test.ts`), a template (`<name>.ts`) or a word. */
const SOURCE_NAME = /(?<![\w.*/<>{}$-])\w[\w./-]*\.(?:ts|mjs|cjs)(?![\w/*-]|\.\w)/g;

/** The source files the text names that are not among the files (repository-relative paths). */
function ghostNames(text: string, files: readonly string[]): string[] {
  const paths = new Set(files);
  const baseNames = new Set(files.map((file) => file.slice(file.lastIndexOf('/') + 1)));
  const insideSrcFolder = new Set(files.filter((file) => file.startsWith('src/')).map((file) => file.split('/').slice(2).join('/')));
  const exists = (name: string) =>
    name.includes('/') ? paths.has(name) || paths.has(`src/${name}`) || paths.has(`test/${name}`) || insideSrcFolder.has(name) : baseNames.has(name);
  const withoutUrls = text.replace(/[a-z][a-z0-9+.-]*:\/\/\S+/gi, '');
  const names = [...withoutUrls.matchAll(SOURCE_NAME)].map((match) => match[0].replace(/^\.\//, ''));
  return [...new Set(names.filter((name) => !exists(name)))];
}

const FILES = filesUnder(ROOT);
const PAGES = FILES.filter((file) => file === 'README.md' || file === 'CONTRIBUTING.md' || (file.startsWith('docs/') && file.endsWith('.md')));

describe('source files named in the docs', () => {
  it('finds the pages and the files it checks against', () => {
    expect(PAGES).toEqual(expect.arrayContaining(['README.md', 'CONTRIBUTING.md', 'docs/architecture.md']));
    expect(FILES).toEqual(expect.arrayContaining(['src/main.ts', '.dependency-cruiser.cjs']));
  });

  it.each(PAGES)('%s names only files that exist', (page) => {
    expect(ghostNames(readFileSync(join(ROOT, page), 'utf8'), FILES)).toEqual([]);
  });

  it('reads names as a reader would', () => {
    const files = ['src/proxy/websocket.ts', 'src/proxy/engines/undici-retry.ts', 'scripts/layer-table.ts', '.dependency-cruiser.cjs'];
    const text = [
      'The tunnels (`proxy/websocket.ts`, `tunnel-registry.ts`), the retry (engines/undici-retry.ts),',
      'scripts/layer-table.ts, ./scripts/layer-table.ts, `.dependency-cruiser.cjs` and src/proxy/gone.mjs.',
      'Not names: `test/**/*.test.ts`, `journal*.ts`, `<name>.ts`, https://example.com/src/absent.ts, a .ts file.',
    ].join('\n');
    expect(ghostNames(text, files)).toEqual(['tunnel-registry.ts', 'src/proxy/gone.mjs']);
  });
});
