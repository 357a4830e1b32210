// The layer table of docs/architecture.md, generated from the one place the
// layers are defined: the LAYERS array of .dependency-cruiser.cjs, which the
// lint enforces. The table sits between two marker comments in the page;
// everything else in the page is written by hand. `--check` (run by the lint
// and by test/docs/layer-table.test.ts) fails when the table differs from
// what the rules say.
//
//   tsx scripts/layer-table.ts          rewrite the table
//   tsx scripts/layer-table.ts --check  exit 1 if it is stale
import { readFileSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

export const ROOT = fileURLToPath(new URL('..', import.meta.url));
/** The page, relative to the repository's root. */
export const LAYER_PAGE = 'docs/architecture.md';
export const BEGIN_MARKER = '<!-- layer-table:begin (generated from LAYERS in .dependency-cruiser.cjs by npm run docs:layers; do not edit) -->';
export const END_MARKER = '<!-- layer-table:end -->';

export interface LayerEntry {
  layer: number;
  name: string;
  path: string;
  job: string;
  mayImport?: string[];
}

export function loadLayers(): LayerEntry[] {
  const rules = createRequire(import.meta.url)(join(ROOT, '.dependency-cruiser.cjs')) as { LAYERS?: LayerEntry[] };
  if (!Array.isArray(rules.LAYERS)) throw new Error('.dependency-cruiser.cjs exports no LAYERS array');
  return rules.LAYERS;
}

/** One row per entry, bottom layer first; `src/` left off a path, as the rest of the page writes folders. */
export function renderLayerTable(layers: readonly LayerEntry[] = loadLayers()): string {
  const byPath = new Map(layers.map((entry) => [entry.name, entry.path]));
  const shown = (path: string) => `\`${path.replace(/^src\/(?=.*\/$)/, '')}\``;
  const rows = [...layers]
    .sort((a, b) => a.layer - b.layer)
    .map((entry) => {
      const also = (entry.mayImport ?? []).map((name) => shown(byPath.get(name) ?? name)).join(', ');
      return `| ${entry.layer} | ${shown(entry.path)} | ${entry.job.replace(/\|/g, '\\|')} | ${also} |`;
    });
  return ['| layer | folder | its job | may also import (same layer) |', '|---|---|---|---|', ...rows].join('\n');
}

/** The page with the text between its markers replaced by the table. */
export function withLayerTable(page: string, table: string = renderLayerTable()): string {
  const begin = page.indexOf(BEGIN_MARKER);
  const end = page.indexOf(END_MARKER);
  if (begin === -1 || end === -1 || end < begin) throw new Error(`${LAYER_PAGE} has no layer table markers (${BEGIN_MARKER} … ${END_MARKER})`);
  return `${page.slice(0, begin + BEGIN_MARKER.length)}\n${table}\n${page.slice(end)}`;
}

/** Why the page's layer table is stale, or undefined when it is what the rules say. */
export function layerTableStaleness(file = join(ROOT, LAYER_PAGE)): string | undefined {
  let page: string;
  try {
    page = readFileSync(file, 'utf8');
  } catch {
    return `${LAYER_PAGE} is missing`;
  }
  let expected: string;
  try {
    expected = withLayerTable(page);
  } catch (error) {
    return (error as Error).message;
  }
  return page === expected ? undefined : `${LAYER_PAGE}'s layer table is stale: run npm run docs:layers`;
}

function main(args: readonly string[]): number {
  if (args.includes('--check')) {
    const problem = layerTableStaleness();
    if (problem === undefined) return 0;
    console.error(problem);
    return 1;
  }
  const file = join(ROOT, LAYER_PAGE);
  writeFileSync(file, withLayerTable(readFileSync(file, 'utf8')));
  console.log(`wrote the layer table of ${LAYER_PAGE}`);
  return 0;
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(resolve(process.argv[1])).href) {
  try {
    process.exitCode = main(process.argv.slice(2));
  } catch (error) {
    console.error(`layer-table: ${(error as Error).message}`);
    process.exitCode = 1;
  }
}
