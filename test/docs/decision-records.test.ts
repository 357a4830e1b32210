// File headers say a module's job and invariants; the reasoning lives in docs/decisions/. This holds both halves:
// no file in src/ opens with more than 12 lines of comment, every `docs/decisions/…` path named in src/ exists, and
// every record is in the index and in Nygard's form (Context, Decision, Consequences).
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const DECISIONS = join(ROOT, 'docs', 'decisions');
const MAX_HEADER_LINES = 12;

function sourceFilesUnder(folder: string): string[] {
  return readdirSync(folder, { withFileTypes: true }).flatMap((entry) => {
    const path = join(folder, entry.name);
    if (entry.isDirectory()) return sourceFilesUnder(path);
    return entry.isFile() && entry.name.endsWith('.ts') && !entry.name.endsWith('.d.ts') ? [path] : [];
  });
}

const SOURCES = sourceFilesUnder(join(ROOT, 'src')).map((path) => [relative(ROOT, path), readFileSync(path, 'utf8')] as const);

/** Lines of the comment a file opens with: `//` lines and `/* … *\/` blocks, up to the first other line (a blank one included). */
function openingCommentLines(source: string): number {
  let count = 0;
  let inBlock = false;
  for (const line of source.split('\n')) {
    const text = line.trimStart();
    if (inBlock) {
      count++;
      if (text.includes('*/')) inBlock = false;
      continue;
    }
    if (text.startsWith('//')) {
      count++;
      continue;
    }
    if (text.startsWith('/*')) {
      count++;
      inBlock = !text.includes('*/');
      continue;
    }
    break;
  }
  return count;
}

const RECORD_NAME = /^\d{4}-[a-z0-9-]+\.md$/;
const RECORDS = readdirSync(DECISIONS).filter((name) => RECORD_NAME.test(name));

describe('source file headers', () => {
  it('counts an opening comment as a reader sees it', () => {
    expect(openingCommentLines('// one\n// two\nimport x from "y";\n// not counted\n')).toBe(2);
    expect(openingCommentLines('/**\n * a\n * b\n */\n// c\nconst x = 1;\n')).toBe(5);
    expect(openingCommentLines('/* one line */\n\n// after a blank line: not the opening comment\n')).toBe(1);
    expect(openingCommentLines('import x from "y";\n')).toBe(0);
  });

  it(`no file in src/ opens with more than ${MAX_HEADER_LINES} lines of comment (the reasoning goes to docs/decisions/)`, () => {
    const long = SOURCES.map(([path, text]) => ({ path, lines: openingCommentLines(text) })).filter(({ lines }) => lines > MAX_HEADER_LINES);
    expect(long).toEqual([]);
  });

  it('every docs/decisions/ path named in src/ exists', () => {
    const named = SOURCES.flatMap(([path, text]) => [...text.matchAll(/docs\/decisions\/[^\s'"`)]+/g)].map((match) => ({ path, record: match[0].replace(/[.,;:]+$/, '') })));
    expect(named.length).toBeGreaterThan(0);
    expect(named.filter(({ record }) => !existsSync(join(ROOT, record)))).toEqual([]);
  });
});

describe('docs/decisions/', () => {
  const index = readFileSync(join(DECISIONS, 'README.md'), 'utf8');

  it('holds only numbered records, numbered once each', () => {
    const stray = readdirSync(DECISIONS).filter((name) => name !== 'README.md' && !RECORD_NAME.test(name));
    expect(stray).toEqual([]);
    const numbers = RECORDS.map((name) => name.slice(0, 4));
    expect(new Set(numbers).size).toBe(numbers.length);
  });

  it.each(RECORDS)('%s is listed in the index', (name) => {
    expect(index).toContain(`](${name})`);
  });

  it.each(RECORDS)('%s has a title, a status, and Context, Decision and Consequences', (name) => {
    const text = readFileSync(join(DECISIONS, name), 'utf8');
    expect(text).toMatch(new RegExp(`^# ${Number(name.slice(0, 4))}\\. \\S`));
    expect(text).toMatch(/^Status: /m);
    for (const section of ['Context', 'Decision', 'Consequences']) expect(text).toMatch(new RegExp(`^## ${section}$`, 'm'));
  });
});
