// LiveParts on its own: the one holder of what changes after start. A good
// edit of the config file puts new routes and gateway CORS in force for the
// next reader; a refused edit leaves both as they were; without a file nothing
// reloads; an API key's use goes to the directory set once, and nowhere before.
// The file watcher is replaced by a hand-fired one, so the tests wait on nothing.
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { beforeEach, describe, expect, it, vi } from 'vitest';
import type { ApiKeyDirectory } from '../../src/account/api-key-directory.js';
import { LiveParts } from '../../src/app/live-parts.js';
import { loadConfig } from '../../src/config-load/load.js';
import { writeTestUsers } from '../helpers/gateway.js';
import { logSink } from '../helpers/log-sink.js';

const watchers = vi.hoisted(() => [] as Array<() => void>);
vi.mock('../../src/config-load/watch-config.js', () => ({
  watchConfigFile: (_file: string, onChange: () => void) => {
    watchers.push(onChange);
    return () => {};
  },
}));

let file: string;

function writeConfig(prefix: string, extra: string[] = []): void {
  writeFileSync(
    file,
    [
      'identity: {provider: local, usersFile: ./users.yaml}',
      'tokens: {keysFile: ./keys.json}',
      ...extra,
      'routes:',
      `  - {name: api, prefix: ${prefix}, upstreams: ["http://127.0.0.1:1"]}`,
    ].join('\n'),
  );
}

const matched = (live: LiveParts, path: string) => live.routes.table.match('GET', undefined, path)?.config.name;

beforeEach(async () => {
  const dir = mkdtempSync(join(tmpdir(), 'gatehouse-live-'));
  file = join(dir, 'gatehouse.yaml');
  await writeTestUsers(join(dir, 'users.yaml'), [{ name: 'alice', password: 'alice-password-1' }]);
  writeConfig('/old');
  watchers.length = 0;
});

describe('LiveParts', () => {
  it('puts the routes and CORS of a good edit in force for the next reader', () => {
    const live = new LiveParts(loadConfig({ file, env: {} }));
    live.watch(file, loadConfig({ file, env: {} }), logSink('info').logger);
    expect(matched(live, '/old/x')).toBe('api');
    expect(live.gatewayCors).toBeUndefined();

    writeConfig('/new', ['cors: {allowedOrigins: ["https://app.example"]}']);
    watchers[0]!();

    expect(matched(live, '/old/x')).toBeUndefined();
    expect(matched(live, '/new/x')).toBe('api');
    expect(live.gatewayCors?.allowedOrigins).toEqual(['https://app.example']);
    live.close();
  });

  it('keeps both as they were when an edit is refused', () => {
    const live = new LiveParts(loadConfig({ file, env: {} }));
    live.watch(file, loadConfig({ file, env: {} }), logSink('info').logger);
    writeFileSync(file, 'routes: [{name: api, prefix: no-slash, upstreams: []}]\n');

    expect(live.reload()).toBe(false);
    expect(matched(live, '/old/x')).toBe('api');
    live.close();
  });

  it('reloads nothing without a config file', () => {
    const live = new LiveParts(loadConfig({ file, env: {} }));
    live.watch(undefined, loadConfig({ file, env: {} }), logSink('info').logger);
    expect(watchers).toHaveLength(0);
    expect(live.reload()).toBe(false);
  });

  it('records an API key use in the directory set once, and nowhere before', () => {
    const live = new LiveParts(loadConfig({ file, env: {} }));
    const uses: string[] = [];
    const directory = { recordUse: (keyId: string) => void uses.push(keyId) } as Pick<ApiKeyDirectory, 'recordUse'> as ApiKeyDirectory;

    live.recordApiKeyUse('before');
    live.recordApiKeyUsesIn(directory);
    live.recordApiKeyUse('after');

    expect(uses).toEqual(['after']);
  });
});
