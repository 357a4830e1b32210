// The image's install without a container engine: the steps the Dockerfile
// takes (the built dist/, `npm ci --omit=dev` into a fresh directory,
// config/container.yaml), then the installed gateway run as an unprivileged
// user on a real Redis: a user added with the installed CLI logs in, a
// request is proxied, a 202 is recorded and its status polled. A module that
// production needs but only devDependencies hold makes the install fail here:
// every bare import in dist/ (lazy ones included) must resolve from it.
// The installed CLI also makes a client secret and its config entry.
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { chmod, chown, cp, mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { parse, stringify } from 'yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loginWhenServed } from '../helpers/gateway.js';
import { freePort } from '../helpers/ports.js';
import { startRedisServer, type RedisServerHandle } from '../helpers/redis-server.js';
import { startUpstream, type Upstream } from '../helpers/upstream.js';

const run = promisify(execFile);
/** `nobody`: any unprivileged user proves the image needs no root. */
const UNPRIVILEGED = { uid: 65534, gid: 65534 };
const INSTALL_TIMEOUT_MS = 180_000;
/** A package name, scoped or not, with an optional subpath: never relative, never `node:`. */
const PACKAGE_SPECIFIER = /^(@[a-z0-9][\w.-]*\/)?[a-z0-9][\w.-]*(\/[\w./-]+)?$/;

let dir: string;
let app: string;
let data: string;
let redis: RedisServerHandle;
let upstream: Upstream;
let gateway: ChildProcess | undefined;
let output = '';
let url: string;
let adminUrl: string;

/** Every module specifier in the compiled code that names a package, static and dynamic imports alike. */
async function bareImports(distDir: string): Promise<Set<string>> {
  const found = new Set<string>();
  const walk = async (folder: string): Promise<void> => {
    for (const entry of await readdir(folder, { withFileTypes: true })) {
      const path = join(folder, entry.name);
      if (entry.isDirectory()) await walk(path);
      else if (entry.name.endsWith('.js')) {
        const code = await readFile(path, 'utf8');
        for (const match of code.matchAll(/(?:from|import)\s*\(?\s*['"]([^'"]+)['"]/g)) {
          const spec = match[1]!;
          if (PACKAGE_SPECIFIER.test(spec)) found.add(spec);
        }
      }
    }
  };
  await walk(distDir);
  return found;
}

async function until(check: () => Promise<boolean>, what: string): Promise<void> {
  for (let i = 0; i < 300; i++) {
    if (gateway?.exitCode != null) throw new Error(`the gateway exited (${gateway.exitCode}) while waiting for ${what}:\n${output}`);
    if (await check().catch(() => false)) return;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error(`gave up waiting for ${what}:\n${output}`);
}

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'gatehouse-install-'));
  await chmod(dir, 0o755); // the unprivileged user reads the install, as it reads /app in the image
  app = join(dir, 'app');
  data = join(dir, 'data');
  await mkdir(app);
  await mkdir(data);
  // The build stage: compile, then install production dependencies only.
  await run(process.execPath, ['node_modules/typescript/bin/tsc', '-p', 'tsconfig.build.json', '--outDir', join(app, 'dist')]);
  for (const file of ['package.json', 'package-lock.json']) await cp(file, join(app, file));
  // The account page's static files, as the image copies them.
  await cp('public', join(app, 'public'), { recursive: true });
  await run('npm', ['ci', '--omit=dev', '--no-audit', '--no-fund', '--prefer-offline', '--ignore-scripts'], { cwd: app, timeout: INSTALL_TIMEOUT_MS });

  redis = await startRedisServer();
  upstream = await startUpstream((req, res) => {
    req.resume();
    req.on('end', () => {
      if (req.url?.startsWith('/app/jobs')) {
        res.writeHead(202, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ requestId: '2b1f6a52-7c1e-4c9b-9a0e-4d3f2c1b0a99' }));
      } else {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ user: req.headers['x-gatehouse-username'] }));
      }
    });
  });

  // config/container.yaml as the image holds it, with this machine's free ports and folders.
  const config = parse(await readFile('config/container.yaml', 'utf8')) as Record<string, Record<string, unknown>>;
  const [port, adminPort] = [await freePort(), await freePort()];
  config.server = { ...config.server, host: '127.0.0.1', port };
  config.admin = { ...config.admin, host: '127.0.0.1', port: adminPort };
  config.identity = { ...config.identity, usersFile: join(data, 'users.yaml') };
  config.tokens = { ...config.tokens, keysFile: join(data, 'keys.json'), issuer: `http://127.0.0.1:${port}` };
  config.requests = { ...config.requests, journalDir: join(data, 'journal') };
  (config as Record<string, unknown>).routes = [{ name: 'app', prefix: '/app', upstreams: [upstream.url] }];
  await writeFile(join(dir, 'gatehouse.yaml'), stringify(config));
  await chown(data, UNPRIVILEGED.uid, UNPRIVILEGED.gid);
  url = `http://127.0.0.1:${port}`;
  adminUrl = `http://127.0.0.1:${adminPort}`;
}, INSTALL_TIMEOUT_MS + 60_000);

afterAll(async () => {
  if (gateway && gateway.exitCode === null) {
    gateway.kill('SIGTERM');
    await new Promise((resolve) => gateway!.once('exit', resolve));
  }
  await upstream?.close();
  await redis?.close();
  if (dir) await rm(dir, { recursive: true, force: true });
});

describe('the production install', () => {
  it('resolves every package the compiled code imports from production dependencies alone', async () => {
    const imports = [...(await bareImports(join(app, 'dist')))];
    expect(imports).toContain('fastify');
    expect(imports).toContain('@opentelemetry/sdk-trace-base'); // loaded only when tracing is on: still installed
    const script = `for (const spec of ${JSON.stringify(imports)}) { try { import.meta.resolve(spec); } catch { console.log(spec); } }`;
    const { stdout } = await run(process.execPath, ['--input-type=module', '-e', script], { cwd: join(app, 'dist') });
    expect(stdout.trim().split('\n').filter(Boolean), 'packages only devDependencies hold').toEqual([]);
    // And the check can fail: a package that is only a devDependency does not resolve there.
    const dev = await run(process.execPath, ['--input-type=module', '-e', `try { import.meta.resolve('vitest'); } catch { console.log('missing'); }`], {
      cwd: join(app, 'dist'),
    });
    expect(dev.stdout.trim()).toBe('missing');
  });

  it('runs as an unprivileged user on Redis: a user added with its CLI logs in, proxies and polls a 202', async () => {
    const env = { PATH: process.env.PATH ?? '', NODE_ENV: 'production', GATEHOUSE_CONFIG: join(dir, 'gatehouse.yaml'), REDIS_URL: redis.url };
    const add = spawn(process.execPath, ['dist/main.js', 'users', 'add', 'demo', '--password-stdin'], { cwd: app, env, ...UNPRIVILEGED });
    add.stdin.end('demo-password-1\n');
    const addCode = await new Promise<number | null>((resolve) => add.once('exit', (code) => resolve(code)));
    expect(addCode).toBe(0);

    gateway = spawn(process.execPath, ['dist/main.js', 'start'], { cwd: app, env, ...UNPRIVILEGED });
    gateway.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString()));
    gateway.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString()));
    await until(async () => (await fetch(`${adminUrl}/readyz`)).status === 200, 'readiness');

    const login = await loginWhenServed(url, 'demo', 'demo-password-1');
    expect(login.status, await login.clone().text()).toBe(200);
    const { access_token } = (await login.json()) as { access_token: string };
    const auth = { authorization: `Bearer ${access_token}` };

    const proxied = await fetch(`${url}/app/hello`, { headers: auth });
    expect(proxied.status).toBe(200);
    expect(await proxied.json()).toEqual({ user: 'demo' });

    const accepted = await fetch(`${url}/app/jobs`, { method: 'POST', headers: auth, body: '{}' });
    expect(accepted.status).toBe(202);
    const { requestId } = (await accepted.json()) as { requestId: string };
    const status = await fetch(`${url}/api/v1/requests/${requestId}/status`, { headers: auth });
    expect(status.status).toBe(200);
    expect(await status.json()).toMatchObject({ status: 'pending' });

    // The account page's files are in the install, and a key made through its API lives in Redis.
    expect((await fetch(`${url}/account`)).status).toBe(200);
    const key = await fetch(`${url}/api/v1/account/api-keys`, {
      method: 'POST',
      headers: { ...auth, 'content-type': 'application/json' },
      body: JSON.stringify({ label: 'installed' }),
    });
    expect(key.status).toBe(201);

    // Everything it wrote belongs to the unprivileged user.
    const { stdout } = await run('stat', ['-c', '%u %n', join(data, 'users.yaml'), join(data, 'keys.json')]);
    for (const line of stdout.trim().split('\n')) expect(line.split(' ')[0]).toBe(String(UNPRIVILEGED.uid));
  });

  it('makes a client secret and the tokens.clients entry the installed check-config accepts, with no checkout or tsx', async () => {
    const env = { PATH: process.env.PATH ?? '', NODE_ENV: 'production', REDIS_URL: redis.url };
    const made = await run(process.execPath, ['dist/main.js', 'clients', 'add', 'orders-service'], { cwd: app, env, ...UNPRIVILEGED });
    const { secret, tokens } = parse(made.stdout) as { secret: string; tokens: { clients: unknown[] } };
    expect(secret).toMatch(/^[A-Za-z0-9_-]{43}$/);
    const config = parse(await readFile(join(dir, 'gatehouse.yaml'), 'utf8')) as { tokens: Record<string, unknown> };
    config.tokens.clients = tokens.clients;
    await writeFile(join(dir, 'with-client.yaml'), stringify(config));
    const checked = await run(process.execPath, ['dist/main.js', '--config', join(dir, 'with-client.yaml'), 'check-config'], {
      cwd: app,
      env,
      ...UNPRIVILEGED,
    });
    expect(checked.stdout).toBe(`configuration OK (${join(dir, 'with-client.yaml')})\n`);
  });
});
