// ConfigReloader on its own: a reload gets the whole check of a start; a
// config with any problem changes nothing and every problem is logged; the
// live part is handed over only when it changed. The file watcher is replaced
// by a hand-fired one, so the tests wait on nothing.
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { beforeEach, describe, expect, it, vi } from 'vitest';
import { loadConfig } from '../../src/config-load/load.js';
import { ConfigReloader } from '../../src/config-load/reload.js';
import type { Config } from '../../src/config/schema.js';
import { writeTestUsers } from '../helpers/gateway.js';
import { logSink, type LogSink } from '../helpers/log-sink.js';

const watchers = vi.hoisted(() => [] as Array<{ file: string; onChange: () => void; stopped: boolean }>);
vi.mock('../../src/config-load/watch-config.js', () => ({
  watchConfigFile: (file: string, onChange: () => void) => {
    const watcher = { file, onChange, stopped: false };
    watchers.push(watcher);
    return () => {
      watcher.stopped = true;
    };
  },
}));

const REFUSED = 'config change refused; the running config stays in force';
const RELOADED = 'config reloaded';

let dir: string;
let file: string;
let logs: LogSink;
let applied: Config[];

function writeConfig(routes: string[], extra: string[] = []): void {
  writeFileSync(
    file,
    [
      'identity: {provider: local, usersFile: ./users.yaml}',
      'tokens: {keysFile: ./keys.json}',
      ...extra,
      routes.length === 0 ? 'routes: []' : 'routes:',
      ...routes.map((route) => `  - ${route}`),
    ].join('\n'),
  );
}

const route = (name: string, prefix = `/${name}`) => `{name: ${name}, prefix: ${prefix}, upstreams: ["http://127.0.0.1:1"]}`;

function reloader(apply: (next: Config) => void = (next) => void applied.push(next)): ConfigReloader {
  return new ConfigReloader({ file, running: loadConfig({ file, env: {} }), logger: logs.logger, apply, env: {} });
}

const logged = (msg: string) => logs.entries().filter((entry) => entry.msg === msg);

beforeEach(async () => {
  dir = mkdtempSync(join(tmpdir(), 'gatehouse-reload-'));
  file = join(dir, 'gatehouse.yaml');
  await writeTestUsers(join(dir, 'users.yaml'), [{ name: 'alice', password: 'alice-password-1' }]);
  writeConfig([route('a')]);
  logs = logSink('info');
  applied = [];
  watchers.length = 0;
});

describe('reload()', () => {
  it('applies a config that passes every check', () => {
    const reload = reloader();
    writeConfig([route('a'), route('b')]);
    expect(reload.reload()).toBe(true);
    expect(applied.map((c) => c.routes.map((r) => r.name))).toEqual([['a', 'b']]);
    expect(logged(RELOADED)).toEqual([expect.objectContaining({ level: 30, file, sections: ['routes'], routes: 2 })]);
  });

  it('keeps the running config and logs every problem of a bad one: schema, content and environment', () => {
    const reload = reloader();
    writeConfig([route('a'), route('a', '/other'), '{prefix: /c, upstreams: []}'], ['server: {port: -1}', 'store: {url: "redis://:6379"}']);
    writeFileSync(join(dir, 'users.yaml'), 'users: [not, a, mapping]\n');
    expect(reload.reload()).toBe(false);
    expect(applied).toEqual([]);
    const [refusal] = logged(REFUSED) as Array<{ level: number; problems: string[] }>;
    expect(refusal!.level).toBe(50);
    expect(refusal!.problems.map((p) => p.split(': ')[0])).toEqual(['server.port', 'store.url', 'routes[1].name', 'routes[2].upstreams', 'identity.usersFile']);
    expect(logged(RELOADED)).toEqual([]);
  });

  it('refuses a config whose live part cannot be put in force, and says why', () => {
    const reload = reloader(() => {
      throw new Error('the routes cannot be compiled');
    });
    writeConfig([route('a'), route('b')]);
    expect(reload.reload()).toBe(false);
    expect(logged(REFUSED)).toEqual([expect.objectContaining({ problems: ['the routes cannot be compiled'] })]);
  });

  it('refuses an edit of sections that need a restart, naming them, and applies nothing of it', () => {
    const reload = reloader();
    writeConfig([route('a'), route('b')], ['server: {port: 8181}', 'log: {level: warn}']);
    expect(reload.reload()).toBe(false);
    expect(applied).toEqual([]);
    // tokens too: its issuer, unset, follows the listener's port.
    expect(logs.entries().at(-1)).toMatchObject({ level: 40, sections: ['server', 'log', 'tokens'] });
    expect(logs.entries().at(-1)!.msg).toMatch(/^config change refused: server, log, tokens take effect only at a restart/);
    expect(logged(RELOADED)).toEqual([]);
  });

  it('reloads authorization and cors live, naming them', () => {
    const reload = reloader();
    writeConfig([route('a')], ['authorization: {roles: [admin]}', 'cors: {allowedOrigins: ["https://app.example.com"]}']);
    expect(reload.reload()).toBe(true);
    expect(applied.map((c) => [c.authorization.roles, c.cors?.allowedOrigins])).toEqual([[['admin'], ['https://app.example.com']]]);
    expect(logged(RELOADED)).toEqual([expect.objectContaining({ level: 30, sections: ['authorization', 'cors'] })]);
  });
});

describe('watch()', () => {
  it('reloads on each change the watcher reports, and stops with close()', () => {
    const reload = reloader();
    reload.watch();
    expect(watchers).toHaveLength(1);
    expect(watchers[0]!.file).toBe(file);

    writeConfig([route('a'), route('b')]);
    watchers[0]!.onChange();
    expect(applied).toHaveLength(1);
    writeConfig([route('a'), route('a')]);
    watchers[0]!.onChange();
    expect(applied).toHaveLength(1);
    expect(logged(REFUSED)).toHaveLength(1);

    reload.close();
    expect(watchers[0]!.stopped).toBe(true);
  });

  it('catches up with an edit made since the running config was read', () => {
    const reload = reloader();
    writeConfig([route('a'), route('late')]);
    reload.watch();
    expect(applied.map((c) => c.routes.map((r) => r.name))).toEqual([['a', 'late']]);
  });

  it('logs nothing when the file is what runs', () => {
    reloader().watch();
    expect(applied).toEqual([]);
    expect(logs.entries()).toEqual([]);
  });
});
