// The documentation holds together: every relative link in README.md,
// CONTRIBUTING.md and docs/**/*.md points to a file that exists (anchors are
// not checked), and the README stays a front page of at most 250 lines.
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const README_MAX_LINES = 250;

function markdownFilesUnder(folder: string): string[] {
  if (!existsSync(folder)) return [];
  return readdirSync(folder, { withFileTypes: true }).flatMap((entry) => {
    const path = join(folder, entry.name);
    if (entry.isDirectory()) return markdownFilesUnder(path);
    return entry.isFile() && entry.name.endsWith('.md') ? [path] : [];
  });
}

const PAGES = [join(ROOT, 'README.md'), join(ROOT, 'CONTRIBUTING.md'), ...markdownFilesUnder(join(ROOT, 'docs'))];

/** The text with fenced code blocks and inline code spans blanked: a path in code is not a link. */
function withoutCode(markdown: string): string {
  const lines: string[] = [];
  let fence: string | null = null;
  for (const line of markdown.split('\n')) {
    const marker = /^\s*(`{3,}|~{3,})/.exec(line)?.[1];
    if (fence === null && marker) {
      fence = marker[0]!.repeat(marker.length);
      lines.push('');
      continue;
    }
    if (fence !== null) {
      if (marker && marker[0] === fence[0] && marker.length >= fence.length) fence = null;
      lines.push('');
      continue;
    }
    lines.push(line.replace(/(`+)(?:(?!\1).)+?\1/g, ''));
  }
  return lines.join('\n');
}

/** Link targets: inline links and images `[text](target "title")`, reference definitions `[x]: target`, and HTML src/href. */
function linkTargets(markdown: string): string[] {
  const text = withoutCode(markdown);
  const targets: string[] = [];
  for (const match of text.matchAll(/\]\(\s*(<[^>]*>|[^()\s]*(?:\([^()\s]*\)[^()\s]*)*)(?:\s+(?:"[^"]*"|'[^']*'|\([^)]*\)))?\s*\)/g)) {
    targets.push(match[1]!.replace(/^<|>$/g, ''));
  }
  for (const match of text.matchAll(/^\s{0,3}\[[^\]]+\]:\s*(<[^>]*>|\S+)/gm)) {
    targets.push(match[1]!.replace(/^<|>$/g, ''));
  }
  for (const match of text.matchAll(/<(?:a|img)\s[^>]*?(?:href|src)\s*=\s*["']([^"']+)["']/gi)) {
    targets.push(match[1]!);
  }
  return targets;
}

/** The file a relative target names, or null for external links and same-page anchors. */
function linkedPath(page: string, target: string): string | null {
  if (target === '' || target.startsWith('#')) return null;
  if (/^[a-z][a-z0-9+.-]*:/i.test(target) || target.startsWith('//')) return null;
  const path = decodeURIComponent(target.replace(/[?#].*$/, ''));
  return path.startsWith('/') ? join(ROOT, path) : resolve(dirname(page), path);
}

describe('documentation links', () => {
  it('finds the pages it checks', () => {
    expect(PAGES.map((page) => relative(ROOT, page))).toEqual(expect.arrayContaining(['README.md', 'CONTRIBUTING.md', join('docs', 'README.md')]));
  });

  it.each(PAGES.map((page) => [relative(ROOT, page), page] as const))('every relative link in %s points to a file that exists', (_name, page) => {
    const broken = linkTargets(readFileSync(page, 'utf8')).filter((target) => {
      const path = linkedPath(page, target);
      return path !== null && !existsSync(path);
    });
    expect(broken).toEqual([]);
  });

  it('reads links as a renderer would', () => {
    const sample = [
      '[a](docs/a.md) and ![b](../b.png "title") and [c](https://example.com) and [d](#anchor)',
      '[e](<docs/with space.md>) `[not](a-link.md)`',
      '```',
      '[not](in-a-fence.md)',
      '```',
      '[ref]: ./ref.md',
    ].join('\n');
    expect(linkTargets(sample)).toEqual(['docs/a.md', '../b.png', 'https://example.com', '#anchor', 'docs/with space.md', './ref.md']);
    expect(linkedPath(join(ROOT, 'docs', 'x.md'), '../README.md#quick-start')).toBe(join(ROOT, 'README.md'));
    expect(linkedPath(join(ROOT, 'docs', 'x.md'), 'https://example.com/x.md')).toBeNull();
  });
});

describe('README.md', () => {
  it(`is a front page of at most ${README_MAX_LINES} lines`, () => {
    const text = readFileSync(join(ROOT, 'README.md'), 'utf8');
    const lines = text.endsWith('\n') ? text.slice(0, -1).split('\n') : text.split('\n');
    expect(lines.length).toBeLessThanOrEqual(README_MAX_LINES);
  });
});

describe('docs/README.md', () => {
  it('links every page under docs/, directly or through the README.md of a section it links', () => {
    const index = join(ROOT, 'docs', 'README.md');
    const linksOf = (page: string) => linkTargets(readFileSync(page, 'utf8')).map((target) => linkedPath(page, target));
    const linked = new Set(linksOf(index));
    const isSectionIndex = (page: string | null): page is string =>
      page !== null && page !== index && page.startsWith(join(ROOT, 'docs', '')) && page.endsWith('README.md') && existsSync(page);
    const sectionIndexes = [...linked].filter(isSectionIndex);
    for (const section of sectionIndexes) for (const page of linksOf(section)) linked.add(page);
    const missing = markdownFilesUnder(join(ROOT, 'docs'))
      .filter((page) => page !== index && !linked.has(page))
      .map((page) => relative(ROOT, page));
    expect(missing).toEqual([]);
  });
});
