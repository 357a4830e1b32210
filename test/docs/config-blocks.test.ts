// Every config block in the documentation works as written. Each ```yaml
// block of README.md, CONTRIBUTING.md and docs/**/*.md is judged by its
// top-level keys: one with `identity:` is a whole config and must load as it
// is; one with other keys of the config schema is a fragment, deep-merged
// onto config/minimal.yaml (lists replaced) and must load so; one with none
// of them (a users file, a compose file) is not a config. Each block is a
// test of its own whose name says how it was judged, so none is skipped
// unseen. Loading is the full check `gatehouse start` runs (schema, content
// and environment checks), from a file in the `config/` folder of a
// temporary checkout (beside its `data/`), next to a copy of the demo users
// file, so relative paths resolve as they do in a clone.
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { parse, parseDocument, stringify } from 'yaml';
import { loadCheckedConfig } from '../../src/config-load/check.js';
import { contentChecks } from '../../src/config-load/content-checks.js';
import { createConfigSchema } from '../../src/config/schema.js';
import { createTestAuthority, type TestAuthority } from '../helpers/certificates.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const MINIMAL = join(ROOT, 'config/minimal.yaml');
const USERS = join(ROOT, 'config/users.yaml');
const CONFIG_KEYS: ReadonlySet<string> = new Set(Object.keys(createConfigSchema(contentChecks).shape));
/** A fronted provider's client secret comes from the environment, as the guide advises. */
const ENV_FOR_OIDC = { GATEHOUSE_OIDC_CLIENT_SECRET: 'client-secret-from-the-environment' };

function markdownFilesUnder(folder: string): string[] {
  if (!existsSync(folder)) return [];
  return readdirSync(folder, { withFileTypes: true })
    .sort((a, b) => a.name.localeCompare(b.name))
    .flatMap((entry) => {
      const path = join(folder, entry.name);
      if (entry.isDirectory()) return markdownFilesUnder(path);
      return entry.isFile() && entry.name.endsWith('.md') ? [path] : [];
    });
}

interface Block {
  /** `docs/guides/routes.md:34`: the page and the line of the opening fence. */
  where: string;
  text: string;
}

/** The ```yaml (or ```yml) fenced blocks of a page, their indentation (inside a list item) removed. */
function yamlBlocks(page: string, markdown: string): Block[] {
  const blocks: Block[] = [];
  const lines = markdown.split('\n');
  for (let i = 0; i < lines.length; i++) {
    const open = /^(\s*)(`{3,}|~{3,})\s*(yaml|yml)\s*$/i.exec(lines[i]!);
    if (open === null) continue;
    const [, indent, fence] = open as unknown as [string, string, string];
    const body: string[] = [];
    let j = i + 1;
    for (; j < lines.length; j++) {
      const line = lines[j]!;
      const close = /^\s*(`{3,}|~{3,})\s*$/.exec(line);
      if (close !== null && close[1]![0] === fence[0] && close[1]!.length >= fence.length) break;
      body.push(line.startsWith(indent) ? line.slice(indent.length) : line.trimStart());
    }
    blocks.push({ where: `${page}:${i + 1}`, text: `${body.join('\n')}\n` });
    i = j;
  }
  return blocks;
}

type Judgement = { kind: 'whole' | 'fragment'; value: Record<string, unknown> } | { kind: 'not a config'; why: string };

function judge(text: string): Judgement {
  const document = parseDocument(text, { uniqueKeys: true });
  if (document.errors.length > 0) throw new Error(`not valid YAML: ${document.errors[0]!.message.split('\n')[0]}`);
  const value: unknown = document.toJS();
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return { kind: 'not a config', why: 'not a mapping' };
  const keys = Object.keys(value);
  if (keys.includes('identity')) return { kind: 'whole', value: value as Record<string, unknown> };
  if (keys.some((key) => CONFIG_KEYS.has(key))) return { kind: 'fragment', value: value as Record<string, unknown> };
  return { kind: 'not a config', why: `top-level keys ${keys.join(', ')}` };
}

function isMapping(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

/** `base` with `over` laid on it: mappings merged key by key, anything else (lists too) replaced. */
function deepMerge(base: Record<string, unknown>, over: Record<string, unknown>): Record<string, unknown> {
  const merged: Record<string, unknown> = { ...base };
  for (const [key, value] of Object.entries(over)) {
    const under = merged[key];
    merged[key] = isMapping(under) && isMapping(value) ? deepMerge(under, value) : value;
  }
  return merged;
}

const folders: string[] = [];
afterAll(() => {
  for (const folder of folders) rmSync(folder, { recursive: true, force: true });
});

let authority: TestAuthority | undefined;
afterAll(() => authority?.remove());

/** The PEM files the guides' TLS examples name (`./certs/…`), made by a test CA: the check reads them as it would real ones. */
function placeCertificates(folder: string): void {
  if (authority === undefined) {
    authority = createTestAuthority('Docs CA');
    authority.issue('gatehouse-client', { usage: 'client' });
    authority.issue('gateway');
  }
  mkdirSync(folder);
  const files = {
    'internal-ca.pem': 'ca.crt',
    'gatehouse-client.crt': 'gatehouse-client.crt',
    'gatehouse-client.key': 'gatehouse-client.key',
    // The public listener's pair and the CA bundle of its clients' certificates (operations/tls.md).
    'gateway.crt': 'gateway.crt',
    'gateway.key': 'gateway.key',
    'clients-ca.pem': 'ca.crt',
  };
  for (const [name, made] of Object.entries(files)) copyFileSync(join(authority.dir, made), join(folder, name));
}

/** Runs the full config check on `text`, written as a file in a fresh checkout's `config/`, which also holds the demo users file. */
function checkConfigText(text: string, value: Record<string, unknown>): void {
  const checkout = mkdtempSync(join(tmpdir(), 'gatehouse-docs-config-'));
  folders.push(checkout);
  // As in a clone: the keys go to `data/` (config/minimal.yaml's ../data/keys.json), outside the config folder.
  mkdirSync(join(checkout, 'data'));
  const folder = join(checkout, 'config');
  mkdirSync(folder);
  copyFileSync(USERS, join(folder, 'users.yaml'));
  if (text.includes('./certs/')) placeCertificates(join(folder, 'certs'));
  const file = join(folder, 'gatehouse.yaml');
  writeFileSync(file, text);
  const identity = value.identity as { provider?: unknown } | undefined;
  const env = identity?.provider === 'oidc' ? ENV_FOR_OIDC : {};
  loadCheckedConfig({ file, env });
}

const PAGES = [join(ROOT, 'README.md'), join(ROOT, 'CONTRIBUTING.md'), ...markdownFilesUnder(join(ROOT, 'docs'))];
const BLOCKS = PAGES.flatMap((page) => yamlBlocks(relative(ROOT, page), readFileSync(page, 'utf8')));
const JUDGED = BLOCKS.map((block) => {
  try {
    return { block, judgement: judge(block.text) };
  } catch (error) {
    return { block, judgement: error as Error };
  }
});

function label(judgement: Judgement | Error): string {
  if (judgement instanceof Error) return judgement.message;
  if (judgement.kind === 'not a config') return `not a config (${judgement.why}): not loaded`;
  return judgement.kind === 'whole' ? 'a whole config: loads as it is' : 'a config fragment: loads merged onto config/minimal.yaml';
}

describe('config blocks in the documentation', () => {
  it('finds the yaml blocks of the documentation', () => {
    expect(BLOCKS.length).toBeGreaterThan(0);
  });

  it('config/minimal.yaml loads as it is', () => {
    const text = readFileSync(MINIMAL, 'utf8');
    expect(() => checkConfigText(text, parse(text) as Record<string, unknown>)).not.toThrow();
  });

  it('config/minimal.yaml comments every line', () => {
    const bare = readFileSync(MINIMAL, 'utf8')
      .split('\n')
      .filter((line) => line.trim() !== '' && !line.includes('#'));
    expect(bare).toEqual([]);
  });

  it.each(JUDGED.map(({ block, judgement }) => [`${block.where}: ${label(judgement)}`, block, judgement] as const))('%s', (_name, block, judgement) => {
    if (judgement instanceof Error) throw new Error(`${block.where}: ${judgement.message}`);
    if (judgement.kind === 'not a config') {
      // Nothing of the config schema at its top: whatever it is, the loader has nothing to say about it.
      expect(judgement.why).not.toBe('');
      return;
    }
    if (judgement.kind === 'whole') {
      checkConfigText(block.text, judgement.value);
      return;
    }
    const merged = deepMerge(parse(readFileSync(MINIMAL, 'utf8')) as Record<string, unknown>, judgement.value);
    checkConfigText(stringify(merged), merged);
  });
});
