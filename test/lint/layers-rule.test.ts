// The layer rules of .dependency-cruiser.cjs catch what they are there to catch: the project's own
// rule set is run (through dependency-cruiser's API, as `npm run lint` runs it through the CLI) on a
// few files laid out like src/ in a temporary folder, so the proof does not depend on the state of
// the real tree.
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { cruise, type IConfiguration, type ICruiseResult } from 'dependency-cruiser';
import { afterEach, describe, expect, it } from 'vitest';

const require = createRequire(import.meta.url);
const config = require('../../.dependency-cruiser.cjs') as IConfiguration;

let root: string | undefined;

afterEach(async () => {
  if (root) await rm(root, { recursive: true, force: true });
  root = undefined;
});

/** Writes the files (paths under src/, contents) and returns the violations as `rule: from → to`. */
async function violations(files: Record<string, string>): Promise<string[]> {
  root = await mkdtemp(join(tmpdir(), 'gatehouse-layers-'));
  for (const [path, text] of Object.entries(files)) {
    await mkdir(dirname(join(root, path)), { recursive: true });
    await writeFile(join(root, path), text);
  }
  // The project's options as they are, but for the cache (the fixture is new each time) and the
  // tsconfig (the CLI reads it; the fixture needs none).
  const { forbidden, options } = config;
  const { cache: _cache, tsConfig: _tsConfig, ...cruiseOptions } = options ?? {};
  const result = await cruise(['src'], { ...cruiseOptions, baseDir: root, validate: true, ruleSet: { forbidden } });
  const output = result.output as ICruiseResult;
  return (output.summary.violations ?? []).map((violation) => `${violation.rule.name}: ${violation.from} → ${violation.to}`);
}

describe('the layer rules (.dependency-cruiser.cjs)', () => {
  it('refuse an import from a lower layer to a higher one: core/ importing proxy/', async () => {
    const found = await violations({
      'src/core/a.ts': "import { b } from '../proxy/b.js';\nexport const a = () => b;\n",
      'src/proxy/b.ts': 'export const b = 1;\n',
    });
    expect(found).toEqual(['layer-core: src/core/a.ts → src/proxy/b.ts']);
  });

  it('let a higher layer import a lower one: proxy/ importing core/', async () => {
    const found = await violations({
      'src/core/a.ts': 'export const a = 1;\n',
      'src/proxy/b.ts': "import { a } from '../core/a.js';\nexport const b = () => a;\n",
    });
    expect(found).toEqual([]);
  });

  it('count a type-only import: core/ naming a type of store/ is refused', async () => {
    const found = await violations({
      'src/core/errors.ts': "import type { Store } from '../store/store.js';\nexport type Holder = { store: Store };\n",
      'src/store/store.ts': 'export interface Store { get(key: string): string }\n',
    });
    expect(found).toEqual(['layer-core: src/core/errors.ts → src/store/store.ts']);
  });

  it('let a plug-in import the proxy, but not the proxy a plug-in, nor one plug-in another', async () => {
    const found = await violations({
      'src/proxy/engine.ts': "import type { Guard } from '../authz/guard.js';\nexport type Engine = { guard?: Guard };\n",
      'src/proxy/route.ts': 'export type Route = string;\n',
      'src/authz/guard.ts': "import type { R } from '../async-requests/r.js';\nexport type Guard = { r?: R };\n",
      'src/async-requests/r.ts': "import type { Route } from '../proxy/route.js';\nexport type R = Route;\n",
    });
    expect(found.sort()).toEqual(['layer-authz: src/authz/guard.ts → src/async-requests/r.ts', 'layer-proxy: src/proxy/engine.ts → src/authz/guard.ts']);
  });

  it('refuse ioredis outside store/, and let store/ have it', async () => {
    const found = await violations({
      'src/limits/counter.ts': "import type { Redis } from 'ioredis';\nexport type Counter = { redis?: Redis };\n",
      'src/store/redis-client.ts': "import type { Redis } from 'ioredis';\nexport type Client = { redis?: Redis };\n",
    });
    expect(found).toEqual([expect.stringMatching(/^redis-only-in-store: src\/limits\/counter\.ts → (node_modules\/ioredis\/.*|ioredis)$/)]);
  });

  it('refuse a loop between files, even inside one folder', async () => {
    const found = await violations({
      'src/store/a.ts': "import type { B } from './b.js';\nexport type A = { b?: B };\n",
      'src/store/b.ts': "import type { A } from './a.js';\nexport type B = { a?: A };\n",
    });
    expect(found).toEqual(['no-circular: src/store/a.ts → src/store/b.ts']);
  });
});
