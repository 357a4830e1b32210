// Live route reload: a gateway started from a YAML file in a temp dir picks up
// route edits of that file without a restart, refuses a broken edit (saying
// why, keeping the routes it had), and applies `reloadRoutes()` (what SIGHUP
// calls) at once.
import { open, readFile, rename, rm, stat, utimes, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { configYaml, startFileGateway, type FileGateway } from '../helpers/config-file.js';
import { login } from '../helpers/gateway.js';
import { startUpstream, type EchoBody, type Upstream } from '../helpers/upstream.js';
import { mustOpen, roundTrip, startWsUpstream, type WsUpstream } from '../helpers/ws.js';

// The one gateway whose file is named UNWATCHED gets no watcher, so that the
// reloadRoutes() tests prove what reloadRoutes() does, not what the poller does.
const UNWATCHED = 'unwatched.yaml';
vi.mock('../../src/config-load/watch-config.js', async (importOriginal) => {
  const actual = await importOriginal<typeof import('../../src/config-load/watch-config.js')>();
  return {
    ...actual,
    watchConfigFile: (file: string, onChange: () => void, intervalMs?: number) =>
      file.endsWith(UNWATCHED) ? () => {} : actual.watchConfigFile(file, onChange, intervalMs),
  };
});

const REFUSED = 'config change refused; the running config stays in force';
const RELOADED = 'config reloaded';

let a: Upstream;
let b: Upstream;
let c: Upstream;
let gw: FileGateway;

const routeA = () => ({ name: 'a', prefix: '/a', upstreams: [a.url], auth: 'none' });
const routeB = () => ({ name: 'b', prefix: '/b', upstreams: [b.url], auth: 'none' });
const routeC = () => ({ name: 'c', prefix: '/c', upstreams: [c.url], auth: 'none' });

async function status(path: string): Promise<number> {
  const response = await fetch(`${gw.url}${path}`);
  await response.arrayBuffer();
  return response.status;
}

const logged = (msg: string) => gw.logs.entries().filter((entry) => entry.msg === msg);

type Refusal = { problems: string[]; level: number };

/**
 * Waits for the watcher to log, from line `from` on, a refusal whose problems
 * match, and returns it. (A poll may also catch the file truncated half-way
 * through a write, and refuse that: those are skipped.)
 */
async function nextRefusal(from: number, problem: RegExp): Promise<Refusal> {
  const refusal = await gw.logs.next((entry) => entry.msg === REFUSED && (entry as unknown as Refusal).problems.some((p) => problem.test(p)), from);
  return refusal as unknown as Refusal;
}

/** Waits for the watcher to apply, from line `from` on, a file with `routes` routes. */
function reloaded(from: number, routes: number): Promise<unknown> {
  return gw.logs.next((entry) => entry.msg === RELOADED && entry.routes === routes, from);
}

/** Writes the routes and waits for the watcher to apply them. */
async function applied(routes: unknown[]): Promise<void> {
  const from = gw.logs.entries().length;
  await gw.writeRoutes(routes);
  await reloaded(from, routes.length);
}

/** Broken edits, each with a valid new route /c beside the problem (which must not apply either). */
const BROKEN_EDITS: Array<[string, () => string, RegExp]> = [
  ['invalid YAML', () => `${configYaml([routeA(), routeC()])}\n  - prefix: [unclosed\n`, /^YAML: /],
  [
    'a route with an invalid upstream URL',
    () => configYaml([routeA(), routeC(), { prefix: '/d', upstreams: ['ftp://127.0.0.1:21'] }]),
    /^routes\[2\]\.upstreams\[0\]: must be an http:\/\/ or https:\/\/ URL$/,
  ],
  [
    'a route prefix under /api/v1/auth/',
    () => configYaml([routeA(), routeC(), { prefix: '/api/v1/auth/extra', upstreams: [c.url] }]),
    /routes\[2\]\.prefix: \/api\/v1\/auth\/extra is served by the gateway itself/,
  ],
  ['a duplicate key', () => configYaml([routeA(), routeC()]).replace('log:\n', 'log:\n  level: info\n'), /^YAML: .*[Mm]ap keys must be unique/],
  [
    'a route with an upstream that is no URL',
    () => configYaml([routeA(), routeC(), { prefix: '/d', upstreams: ['not a url'] }]),
    /^routes\[2\]\.upstreams\[0\]: /,
  ],
  [
    'a route prefix with dot segments',
    () => configYaml([routeA(), routeC(), { prefix: '/x/../a', upstreams: [c.url] }]),
    /prefix "\/x\/\.\.\/a" holds \. or \.\. segments/,
  ],
  ['a misspelt route key', () => configYaml([routeA(), routeC(), { prefix: '/d', upstream: [c.url] }]), /^routes\[2\]/],
  ['a route with no upstream', () => configYaml([routeA(), routeC(), { prefix: '/d', upstreams: [] }]), /^routes\[2\]\.upstreams: /],
];

beforeAll(async () => {
  [a, b, c] = await Promise.all([startUpstream(), startUpstream(), startUpstream()]);
  gw = await startFileGateway([routeA()]);
});
afterAll(async () => {
  await gw.close();
  await Promise.all([a.close(), b.close(), c.close()]);
});

describe('the watched config file', () => {
  it("starts with the file's routes", async () => {
    expect(await status('/a/x')).toBe(200);
    expect(await status('/b/x')).toBe(404);
  });

  it('makes a route added to the file work, without a restart', async () => {
    await applied([routeA(), routeB()]);
    expect(await status('/b/x')).toBe(200);
    expect((b.seen.at(-1) as EchoBody).url).toBe('/b/x');
    expect(await status('/a/x')).toBe(200);
    expect(logged(RELOADED).at(-1)).toMatchObject({ routes: 2 });
  });

  it('makes a route removed from the file answer 404', async () => {
    expect(await status('/b/x')).toBe(200);
    await applied([routeA()]);
    expect(await status('/b/x')).toBe(404);
    expect(await status('/a/x')).toBe(200);
    const seen = b.seen.length;
    expect(await status('/b/y')).toBe(404);
    expect(b.seen.length).toBe(seen);
  });

  it.each(BROKEN_EDITS.slice(0, 3))(
    'refuses %s with an error log line naming the problem; the old routes keep working and nothing of the edit applies',
    async (_case, text, problem) => {
      const from = gw.logs.entries().length;
      await writeFile(gw.configFile, text());
      const refusal = await nextRefusal(from, problem);
      expect(refusal.level).toBe(50); // error
      expect(await status('/a/x')).toBe(200);
      // The valid route that came with the broken edit was not applied either.
      expect(await status('/c/x')).toBe(404);
    },
  );

  it('recovers with the next good edit after a broken one', async () => {
    const from = gw.logs.entries().length;
    await writeFile(gw.configFile, 'routes: [\n');
    await nextRefusal(from, /^YAML: /);
    await applied([routeA(), routeC()]);
    expect(await status('/c/x')).toBe(200);
  });

  it('keeps the routes while the file is missing, and picks up a file put back by rename (editors save that way)', async () => {
    const saved = await readFile(gw.configFile, 'utf8');
    let from = gw.logs.entries().length;
    await rm(gw.configFile);
    const refusal = await nextRefusal(from, /^cannot read the file: ENOENT$/);
    expect(refusal.problems).toEqual(['cannot read the file: ENOENT']);
    expect(await status('/a/x')).toBe(200);

    const temp = join(gw.dir, 'gatehouse.yaml.tmp');
    await writeFile(temp, saved.replace('routes:', `routes:\n  - name: b\n    prefix: /b\n    upstreams: ["${b.url}"]\n    auth: none`));
    from = gw.logs.entries().length;
    await rename(temp, gw.configFile);
    await reloaded(from, 3);
    expect(await status('/b/x')).toBe(200);
  });
});

describe('the watcher and edits that keep size and mtime', () => {
  it('still notices them (cp -p, rsync -t and tar put the old mtime back)', async () => {
    const pad = (text: string, size: number) => `${text}${'#'.repeat(size - Buffer.byteLength(text) - 1)}\n`;
    const size = Buffer.byteLength(configYaml([routeA(), routeB()])) + 64;
    // A whole second, so that putting it back is exact.
    const mtime = Math.floor(Date.now() / 1000) - 60;
    // The first version goes in whole (written aside, then renamed), so that
    // the one reload it causes shows the poller has taken in its final state.
    const temp = join(gw.dir, 'gatehouse.yaml.tmp');
    await writeFile(temp, pad(configYaml([routeA()]), size));
    await utimes(temp, mtime, mtime);
    const from = gw.logs.entries().length;
    await rename(temp, gw.configFile);
    await reloaded(from, 1);
    expect(await status('/b/x')).toBe(404);
    const before = await stat(gw.configFile);

    const next = gw.logs.entries().length;
    // Rewritten in place, not truncated, and the mtime put back at once: a
    // poll in between would see a change the edit is meant to hide.
    const handle = await open(gw.configFile, 'r+');
    try {
      await handle.write(pad(configYaml([routeA(), routeB()]), size), 0);
      await handle.utimes(mtime, mtime);
    } finally {
      await handle.close();
    }
    const after = await stat(gw.configFile);
    expect([after.size, after.mtimeMs, after.ino]).toEqual([before.size, before.mtimeMs, before.ino]);
    await reloaded(next, 2);
    expect(await status('/b/x')).toBe(200);
  });
});

describe('reloadRoutes() (what SIGHUP calls)', () => {
  // A gateway whose file nobody polls (see the mock above): only reloadRoutes() can apply an edit.
  let unwatched: FileGateway;
  const get = async (path: string) => {
    const response = await fetch(`${unwatched.url}${path}`);
    await response.arrayBuffer();
    return response.status;
  };
  beforeAll(async () => {
    unwatched = await startFileGateway([routeA()], { fileName: UNWATCHED });
  });
  afterAll(() => unwatched.close());

  it('applies a change at once', async () => {
    await unwatched.writeRoutes([routeA(), routeB()]);
    expect(await get('/b/x')).toBe(404);
    expect(await unwatched.gateway.reloadRoutes()).toBe(true);
    expect(await get('/b/x')).toBe(200);
    expect(await get('/a/x')).toBe(200);
    expect(
      unwatched.logs
        .entries()
        .filter((e) => e.msg === RELOADED)
        .at(-1),
    ).toMatchObject({ level: 30, routes: 2 });
  });

  it('refuses a broken file, returns false, logs why and changes nothing', async () => {
    await unwatched.writeRoutes([routeA(), routeC(), { prefix: '/api/v1/auth/', upstreams: [c.url] }]);
    expect(await unwatched.gateway.reloadRoutes()).toBe(false);
    expect(
      unwatched.logs
        .entries()
        .filter((e) => e.msg === REFUSED)
        .at(-1),
    ).toMatchObject({
      level: 50,
      problems: [expect.stringContaining('routes[2].prefix: /api/v1/auth/ is served by the gateway itself')],
    });
    expect(await get('/a/x')).toBe(200);
    expect(await get('/b/x')).toBe(200);
    expect(await get('/c/x')).toBe(404);
  });

  it.each(BROKEN_EDITS)('refuses %s at once, naming the problem', async (_case, text, problem) => {
    await writeFile(unwatched.configFile, text());
    expect(await unwatched.gateway.reloadRoutes()).toBe(false);
    const refusal = unwatched.logs
      .entries()
      .filter((e) => e.msg === REFUSED)
      .at(-1) as { problems: string[]; level: number };
    expect(refusal.level).toBe(50);
    expect(refusal.problems.some((p) => problem.test(p))).toBe(true);
    expect(await get('/a/x')).toBe(200);
    expect(await get('/c/x')).toBe(404);
  });

  it('refuses a change of a section that needs a restart, naming it', async () => {
    await writeFile(unwatched.configFile, configYaml([routeA()]).replace('accessTokenTtlS: 60', 'accessTokenTtlS: 30'));
    expect(await unwatched.gateway.reloadRoutes()).toBe(false);
    expect(unwatched.logs.entries().at(-1)).toMatchObject({ level: 40, sections: ['tokens'] });
    expect(unwatched.logs.entries().at(-1)!.msg).toMatch(/^config change refused: tokens take effect only at a restart/);
  });
});

describe('an edit made while the gateway starts', () => {
  it('is applied, not lost until the next edit', async () => {
    const late = await startFileGateway([routeA()], {
      afterLoad: (file) => writeFile(file, configYaml([routeA(), routeC()])),
    });
    try {
      const get = async (path: string) => (await fetch(`${late.url}${path}`)).status;
      await late.logs.next((entry) => entry.msg === RELOADED && entry.routes === 2);
      expect(await get('/c/x')).toBe(200);
      expect(await get('/a/x')).toBe(200);
    } finally {
      await late.close();
    }
  });

  it('logs nothing when the file did not change', async () => {
    // The start-up check runs while the gateway is created: had it logged, the line would be there now.
    const quiet = await startFileGateway([routeA()]);
    try {
      expect(quiet.logs.entries().filter((e) => e.msg === RELOADED || e.msg === REFUSED)).toEqual([]);
    } finally {
      await quiet.close();
    }
  });
});

describe('reloads and WebSockets', () => {
  let ws: WsUpstream;
  beforeAll(async () => {
    ws = await startWsUpstream();
    await gw.writeRoutes([routeA(), { name: 'ws', prefix: '/ws', upstreams: [ws.url] }]);
    if (!(await gw.gateway.reloadRoutes())) throw new Error('the WebSocket route was not applied');
  });
  afterAll(() => ws.close());

  it('finishes an upgrade whose token check was under way when the routes were swapped', async () => {
    const tokens = await login(gw.url, 'alice', 'alice-password-1');
    const bearer = gw.gateway.bearer;
    const original = bearer.authenticate.bind(bearer);
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    let calls = 0;
    let checking!: () => void;
    const checkStarted = new Promise<void>((resolve) => (checking = resolve));
    const spy = vi.spyOn(bearer, 'authenticate').mockImplementation(async (token: string) => {
      calls += 1;
      checking();
      await gate;
      return original(token);
    });
    try {
      const opening = mustOpen(`${gw.url}/ws/live`, { headers: { authorization: `Bearer ${tokens.access_token}` } });
      await checkStarted;
      expect(calls).toBe(1);
      // The same routes, freshly compiled: every route object is a new one.
      expect(await gw.gateway.reloadRoutes()).toBe(true);
      release();
      const socket = await opening;
      expect(await roundTrip(socket, 'across a reload')).toBe('across a reload');
      socket.close();
    } finally {
      spy.mockRestore();
    }
  });

  it('keeps an open tunnel across a reload', async () => {
    const tokens = await login(gw.url, 'alice', 'alice-password-1');
    const socket = await mustOpen(`${gw.url}/ws/live`, { headers: { authorization: `Bearer ${tokens.access_token}` } });
    expect(await gw.gateway.reloadRoutes()).toBe(true);
    expect(await roundTrip(socket, 'still open')).toBe('still open');
    socket.close();
  });
});
