// The layer table of docs/architecture.md is generated from LAYERS in .dependency-cruiser.cjs by
// scripts/layer-table.ts. Here: the page holds what the generator makes of the rules now (else run
// npm run docs:layers), a changed rule is reported stale, and every layer entry is placed in the table.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { LAYER_PAGE, layerTableStaleness, loadLayers, renderLayerTable, ROOT, withLayerTable } from '../../scripts/layer-table.js';

const page = () => readFileSync(join(ROOT, LAYER_PAGE), 'utf8');

function staleOf(text: string): string | undefined {
  const folder = mkdtempSync(join(tmpdir(), 'gatehouse-layer-table-'));
  try {
    const file = join(folder, 'architecture.md');
    writeFileSync(file, text);
    return layerTableStaleness(file);
  } finally {
    rmSync(folder, { recursive: true, force: true });
  }
}

describe('layer table', () => {
  it(`${LAYER_PAGE} holds the table the lint rules make`, () => {
    expect(layerTableStaleness()).toBeUndefined();
  });

  it('is reported stale when a rule moves a folder to another layer', () => {
    const moved = loadLayers().map((entry) => (entry.name === 'dpop' ? { ...entry, layer: entry.layer + 1 } : entry));
    const drifted = withLayerTable(page(), renderLayerTable(moved));
    expect(staleOf(drifted)).toBe(`${LAYER_PAGE}'s layer table is stale: run npm run docs:layers`);
  });

  it('is reported stale when the table is edited by hand', () => {
    expect(staleOf(page().replace('| `dpop/` |', '| `dpop2/` |'))).toMatch(/is stale: run npm run docs:layers$/);
  });

  it('names the markers when they are gone', () => {
    expect(staleOf('# Architecture\n')).toMatch(/has no layer table markers/);
  });

  it('places every folder and file of the rules, in one row each, bottom first', () => {
    const layers = loadLayers();
    const rows = renderLayerTable(layers).split('\n').slice(2);
    expect(rows).toHaveLength(layers.length);
    const cells = rows.map((row) => row.split(' | '));
    const placed = cells.map((cell) => cell[1]?.replace(/`/g, ''));
    expect(placed.sort()).toEqual(layers.map((entry) => entry.path.replace(/^src\/(?=.*\/$)/, '')).sort());
    const numbers = cells.map((cell) => Number(cell[0]?.replace('| ', '')));
    expect(numbers).toEqual([...numbers].sort((a, b) => a - b));
    expect(rows.some((row) => row.startsWith('| 4 | `dpop/` |'))).toBe(true);
  });
});
