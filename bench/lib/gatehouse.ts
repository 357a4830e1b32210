// Gatehouse as the benchmarks run it: the built `dist/`, a process of its
// own, a temporary config with one user (default scrypt cost) and an API key.
import { execFileSync, spawn } from 'node:child_process';
import { request as httpsRequest } from 'node:https';
import { existsSync, mkdtempSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { stringify } from 'yaml';
import { generateApiKey } from '../../src/users/api-keys.js';
import { hashPassword } from '../../src/users/passwords.js';
import { writeUsersFile } from '../../src/users/users-file.js';
import { freePort } from '../../test/helpers/ports.js';
import { own, processCpuMicros, stopProcess, type ServerProcess } from './processes.js';

export const BENCH_USER = 'bench';
export const BENCH_PASSWORD = 'bench-password-1';

export interface GatehouseProcess extends ServerProcess {
  adminUrl: string;
  apiKey: string;
  /** The temporary folder of its config, users file and keys file. */
  dir: string;
  /** The bench user's subject. */
  userId: string;
}

/** The launcher of the engines section with the source it runs (dist-bench/). */
const ENGINE_LAUNCHER = 'dist-bench/bench/engines/gatehouse-on-engine.js';

/** Compiles Gatehouse as `npm run build` does, and the engine launcher with the same compiler and settings. */
export function buildGatehouse(): void {
  for (const project of ['tsconfig.build.json', 'tsconfig.bench.json']) {
    execFileSync(process.execPath, ['node_modules/typescript/bin/tsc', '-p', project], { stdio: 'inherit' });
  }
  // The account page's files are found two levels above its module, as from dist/account/: dist-bench/public.
  if (!existsSync('dist-bench/public')) symlinkSync(resolve('public'), 'dist-bench/public');
}

export interface StartOptions {
  routes: unknown[];
  logLevel?: string;
  extra?: Record<string, unknown>;
  nodeArgs?: string[];
  env?: Record<string, string>;
  /** Forward with this engine, started by bench/engines/gatehouse-on-engine.ts instead of `dist/main.js start`. */
  engine?: 'undici' | 'http-proxy' | 'http-proxy-3';
  /** The compiled Gatehouse to run (default `dist`): another build, for a comparison of two builds in one run. */
  distDir?: string;
  /** The identity section in place of the local users file (a fronted OpenID Provider). */
  identity?: Record<string, unknown>;
  /** Pins the process (its thread pool included) to this CPU with taskset (util-linux). */
  cpu?: number;
}

export async function startGatehouse(options: StartOptions): Promise<GatehouseProcess> {
  const dir = mkdtempSync(join(tmpdir(), 'gatehouse-bench-'));
  const { key, keyId, hash } = generateApiKey();
  const createdAt = new Date().toISOString();
  const userId = crypto.randomUUID();
  await writeUsersFile(join(dir, 'users.yaml'), {
    users: {
      [BENCH_USER]: {
        id: userId,
        passwordHash: await hashPassword(BENCH_PASSWORD),
        disabled: false,
        createdAt,
        // For route rules (bench/authz.ts): harmless where no route has one.
        roles: ['reader'],
        apiKeys: [{ id: keyId, hash, createdAt }],
      },
    },
  });
  const [port, adminPort] = [await freePort(), await freePort()];
  const config = {
    server: { host: '127.0.0.1', port },
    admin: { host: '127.0.0.1', port: adminPort },
    log: { level: options.logLevel ?? 'info' },
    identity: options.identity ?? { provider: 'local', usersFile: './users.yaml' },
    // Long enough for a whole run: an access token that expired mid-run would
    // turn the rest of it into 401s. The check costs the same either way.
    tokens: { issuer: `http://127.0.0.1:${port}`, keysFile: './keys.json', accessTokenTtlS: 3600 },
    routes: options.routes,
  };
  // Sections of `extra` merge into the defaults above (tokens: {cacheMaxEntries} keeps the rest).
  for (const [section, value] of Object.entries(options.extra ?? {})) {
    const base = (config as Record<string, unknown>)[section];
    (config as Record<string, unknown>)[section] =
      base && typeof base === 'object' && value && typeof value === 'object' && !Array.isArray(value) ? { ...base, ...value } : value;
  }
  const file = join(dir, 'gatehouse.yaml');
  writeFileSync(file, stringify(config));
  const entry = options.engine ? [ENGINE_LAUNCHER, options.engine, file] : [join(options.distDir ?? 'dist', 'main.js'), 'start', '--config', file];
  // Logs go where production logs go: a file descriptor the process writes to.
  const command = [process.execPath, ...(options.nodeArgs ?? []), ...entry];
  // taskset execs the command: the child's pid is Gatehouse's own.
  if (options.cpu !== undefined) command.unshift('taskset', '-c', String(options.cpu));
  const child = own(
    spawn(command[0]!, command.slice(1), {
      stdio: ['ignore', 'ignore', 'inherit'],
      env: { ...process.env, REDIS_URL: process.env.BENCH_REDIS_URL ?? '', ...options.env },
    }),
  );
  const url = `http://127.0.0.1:${port}`;
  const adminUrl = `http://127.0.0.1:${adminPort}`;
  const deadline = Date.now() + 20_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`gatehouse exited with ${child.exitCode}`);
    const ready = await fetch(`${adminUrl}/readyz`).then(
      (r) => r.ok,
      () => false,
    );
    if (ready) break;
    if (Date.now() > deadline) throw new Error('gatehouse did not become ready');
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  return {
    name: 'gatehouse',
    port,
    url,
    adminUrl,
    apiKey: key,
    dir,
    userId,
    child,
    cpuMicros: () => processCpuMicros(child.pid!),
    stop: () => stopProcess(child),
  };
}

export interface Tokens {
  access_token: string;
  refresh_token: string;
}

/** `provider`: with several identity providers, the one to log in at (absent: the default one). */
export async function loginTokens(url: string, password = BENCH_PASSWORD, provider?: string): Promise<Tokens> {
  // A 503 with Retry-After (load shed while a loaded machine makes the event loop late) is asked again, as a client should.
  for (let attempt = 1; ; attempt++) {
    const response = await fetch(`${url}/api/v1/auth/login`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ username: BENCH_USER, password, ...(provider !== undefined && { provider }) }),
    });
    const retryAfterS = Number(response.headers.get('retry-after'));
    if (response.status === 503 && retryAfterS > 0 && attempt < 10) {
      await response.body?.cancel();
      await new Promise((resolve) => setTimeout(resolve, retryAfterS * 1000));
      continue;
    }
    if (!response.ok) throw new Error(`bench login failed: ${response.status}`);
    return (await response.json()) as Tokens;
  }
}

/** The login over TLS: fetch would refuse the bench's self-signed certificate. A 503 (load shed) is asked again, as loginTokens does. */
export async function loginOverTls(url: string, ca: Buffer): Promise<string> {
  for (let attempt = 1; ; attempt++) {
    const { status, text } = await tlsLogin(url, ca);
    if (status === 200) return (JSON.parse(text) as { access_token: string }).access_token;
    if (status !== 503 || attempt >= 10) throw new Error(text);
    await new Promise((resolve) => setTimeout(resolve, 1_000));
  }
}

function tlsLogin(url: string, ca: Buffer): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    const body = JSON.stringify({ username: BENCH_USER, password: BENCH_PASSWORD });
    const req = httpsRequest(
      `${url}/api/v1/auth/login`,
      { method: 'POST', ca, servername: 'localhost', headers: { 'content-type': 'application/json' } },
      (res) => {
        let text = '';
        res.setEncoding('utf8').on('data', (chunk: string) => (text += chunk));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, text }));
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}
