// Every code of the error catalogue is documented in docs/reference/errors.md,
// with the catalogue's status, message and OAuth error, and the page names no
// code the catalogue no longer has (as fastify's test/internals/errors.test.js
// keeps its Errors.md in step with its errors).
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { ERRORS } from '../../src/core/errors.js';

const PAGE = fileURLToPath(new URL('../../docs/reference/errors.md', import.meta.url));

interface DocumentedCode {
  code: string;
  status?: number;
  message?: string;
  oauthError?: string;
}

/** The "## Catalogue" section: from its heading to the next heading of the same level. */
function catalogueSection(markdown: string): string {
  const lines = markdown.split('\n');
  const start = lines.findIndex((line) => /^## Catalogue\s*$/.test(line));
  if (start === -1) throw new Error('docs/reference/errors.md has no "## Catalogue" section');
  const end = lines.findIndex((line, i) => i > start && /^## /.test(line));
  return lines.slice(start + 1, end === -1 ? undefined : end).join('\n');
}

/** Codes named as a table row's first cell (`| \`code\` | status | message | \`oauth\` | …`) or as a heading (`### \`code\``). */
function documentedCodes(section: string): DocumentedCode[] {
  const found: DocumentedCode[] = [];
  for (const line of section.split('\n')) {
    const heading = /^#{3,6}\s+`?([a-z][a-z0-9_]*)`?\s*$/.exec(line);
    if (heading) {
      found.push({ code: heading[1]! });
      continue;
    }
    if (!line.startsWith('|')) continue;
    const cells = line
      .replace(/^\|/, '')
      .replace(/\|\s*$/, '')
      .split(/(?<!\\)\|/)
      .map((cell) => cell.trim());
    const code = /^`([a-z][a-z0-9_]*)`$/.exec(cells[0] ?? '')?.[1];
    if (code === undefined) continue;
    found.push({
      code,
      status: Number(cells[1]),
      message: cells[2],
      oauthError: /^`([a-z_]+)`$/.exec(cells[3] ?? '')?.[1],
    });
  }
  return found;
}

describe('docs/reference/errors.md', () => {
  const documented = documentedCodes(catalogueSection(readFileSync(PAGE, 'utf8')));
  const catalogue = Object.keys(ERRORS) as Array<keyof typeof ERRORS>;

  it('documents every code of the catalogue', () => {
    const names = new Set(documented.map((entry) => entry.code));
    expect(catalogue.filter((code) => !names.has(code))).toEqual([]);
  });

  it('names no code the catalogue does not have, and each code once', () => {
    expect(documented.map((entry) => entry.code).filter((code) => !Object.hasOwn(ERRORS, code))).toEqual([]);
    const seen = documented.map((entry) => entry.code);
    expect(seen.filter((code, i) => seen.indexOf(code) !== i)).toEqual([]);
  });

  it("gives each code the catalogue's status, message and OAuth error", () => {
    const wrong = documented
      .filter((entry) => entry.status !== undefined && Object.hasOwn(ERRORS, entry.code))
      .flatMap((entry) => {
        const definition = ERRORS[entry.code as keyof typeof ERRORS];
        const differences: string[] = [];
        if (entry.status !== definition.status) differences.push(`${entry.code}: status ${entry.status}, catalogue ${definition.status}`);
        if (entry.message !== definition.message) differences.push(`${entry.code}: message "${entry.message}", catalogue "${definition.message}"`);
        if (entry.oauthError !== definition.oauthError) differences.push(`${entry.code}: OAuth error ${entry.oauthError}, catalogue ${definition.oauthError}`);
        return differences;
      });
    expect(wrong).toEqual([]);
  });
});
