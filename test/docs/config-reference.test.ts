// The configuration reference (docs/reference/configuration.md) is generated
// from the schema and its comments by scripts/config-reference.ts. Here: the
// page is what the generator makes of the schema now (else it is stale: run
// npm run docs:config), and every leaf field of the schema, found by a walk
// of zod's JSON Schema of its own, is named in the page.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { configSections, REFERENCE_PAGE, renderConfigurationReference, ROOT, staleness } from '../../scripts/config-reference.js';
import { contentChecks } from '../../src/config-load/content-checks.js';
import { createConfigSchema } from '../../src/config/schema.js';

interface JsonNode {
  properties?: Record<string, JsonNode>;
  items?: JsonNode;
  anyOf?: JsonNode[];
  oneOf?: JsonNode[];
  additionalProperties?: JsonNode | boolean;
}

/** Leaf field paths as the page writes them: list entries `[]`, a map's values `<…>` (here a pattern: `<` any name `>`). */
function leafPaths(node: JsonNode, path: string): string[] {
  const variants = node.oneOf ?? node.anyOf ?? [];
  if (variants.some((variant) => variant.properties !== undefined)) return variants.flatMap((variant) => leafPaths(variant, path));
  if (node.properties !== undefined) return Object.entries(node.properties).flatMap(([key, child]) => leafPaths(child, path === '' ? key : `${path}.${key}`));
  if (node.items?.properties !== undefined) return leafPaths(node.items, `${path}[]`);
  const value = node.additionalProperties;
  if (typeof value === 'object' && value.properties !== undefined) return leafPaths(value, `${path}.<*>`);
  return [path];
}

function pattern(path: string): RegExp {
  const escaped = path.replace(/[.*+?^${}()|[\]\\]/g, '\\$&').replace('<\\*>', '<[a-z]+>');
  return new RegExp(`\`${escaped}\``);
}

describe('configuration reference', () => {
  it(`${REFERENCE_PAGE} is up to date with the schema and its comments`, () => {
    expect(staleness()).toBeUndefined();
  });

  it('a page that differs is reported stale, with the command that fixes it', () => {
    const folder = mkdtempSync(join(tmpdir(), 'gatehouse-config-reference-'));
    try {
      const file = join(folder, 'configuration.md');
      writeFileSync(file, renderConfigurationReference().replace('`server.port`', '`server.prot`'));
      expect(staleness(file)).toMatch(/^docs\/reference\/configuration\.md is stale: run npm run docs:config \(first difference at line \d+\)$/);
      expect(staleness(join(folder, 'missing.md'))).toMatch(/is stale/);
    } finally {
      rmSync(folder, { recursive: true, force: true });
    }
  });

  it('names every leaf field of the schema', async () => {
    const json = z.toJSONSchema(createConfigSchema(contentChecks), { io: 'input', unrepresentable: 'any' }) as JsonNode;
    const leaves = leafPaths(json, '');
    const samples = ['server.port', 'identity.usersFile', 'identity.clientSecret', 'routes[].async.statusUrlTemplate', 'tokens.clients[].id'];
    expect(leaves).toEqual(expect.arrayContaining(samples));
    const page = await readFile(join(ROOT, REFERENCE_PAGE), 'utf8');
    expect(leaves.filter((path) => !pattern(path).test(page))).toEqual([]);
  });

  it('describes every field and section', () => {
    // The generator refuses to run otherwise; this says which ones.
    const sections = configSections();
    const rows = sections.flatMap((section) => [...section.rows, ...section.variants.flatMap((variant) => variant.rows)]);
    expect(rows.filter((row) => row.description === '').map((row) => row.path)).toEqual([]);
    expect(sections.filter((section) => section.doc === '').map((section) => section.key)).toEqual([]);
  });
});
