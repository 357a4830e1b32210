// Starts a real Gatehouse on loopback for a test: temp users file, temp keys,
// port 0 unless the test needs a known port (the OIDC issuer URL).
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createGateway, type Gateway } from '../../src/app/gateway.js';
import { parseConfig } from '../../src/config-load/load.js';
import type { Config } from '../../src/config/schema.js';
import { generateApiKey } from '../../src/users/api-keys.js';
import type { PasswordVerifier } from '../../src/users/password-check-options.js';
import { hashPassword } from '../../src/users/passwords.js';
import { writeUsersFile, type UsersFileData } from '../../src/users/users-file.js';
import type { Store } from '../../src/store/store.js';
import { logSink, type LogSink } from './log-sink.js';

/** Cheap scrypt parameters: tests are about behaviour, not hashing cost. */
export const TEST_SCRYPT_PARAMS = { logN: 10, r: 8, p: 1 };

export interface TestUser {
  name: string;
  password: string;
  disabled?: boolean;
  /** Create this many API keys; their plaintext comes back in `apiKeys`. */
  apiKeys?: number;
  roles?: string[];
  groups?: string[];
}

export interface TestGateway {
  gateway: Gateway;
  url: string;
  adminUrl: string | undefined;
  /** The health-only listener's address (`server.health.on: own`). */
  healthUrl: string | undefined;
  config: Config;
  dir: string;
  usersFile: string;
  logs: LogSink;
  /** Plaintext API keys by user name. */
  apiKeys: Record<string, string[]>;
  close(): Promise<void>;
}

export const DEFAULT_TEST_USERS: TestUser[] = [
  { name: 'alice', password: 'alice-password-1', apiKeys: 1 },
  { name: 'bob', password: 'bob-password-1' },
  { name: 'mallory', password: 'mallory-password-1', disabled: true },
];

export async function writeTestUsers(usersFile: string, users: TestUser[]): Promise<Record<string, string[]>> {
  const data: UsersFileData = { users: {} };
  const apiKeys: Record<string, string[]> = {};
  const createdAt = new Date().toISOString();
  for (const user of users) {
    const keys = Array.from({ length: user.apiKeys ?? 0 }, () => generateApiKey());
    apiKeys[user.name] = keys.map((k) => k.key);
    data.users[user.name] = {
      id: crypto.randomUUID(),
      passwordHash: await hashPassword(user.password, TEST_SCRYPT_PARAMS),
      disabled: user.disabled ?? false,
      createdAt,
      ...(user.roles && { roles: user.roles }),
      ...(user.groups && { groups: user.groups }),
      apiKeys: keys.map((k) => ({ id: k.keyId, hash: k.hash, createdAt })),
    };
  }
  await writeUsersFile(usersFile, data);
  return apiKeys;
}

export interface StartOptions {
  users?: TestUser[];
  /** Deep-merged over the test defaults, section by section. */
  config?: Record<string, Record<string, unknown> | unknown[]>;
  store?: Store;
  port?: number;
  /** Watch this config file for route changes. */
  configFile?: string;
  /** Checks passwords in place of scrypt (a test holding the hashing). */
  verifyPassword?: PasswordVerifier;
}

type IdentityOverride = { provider?: string; providers?: Array<Record<string, unknown>> } & Record<string, unknown>;

function identitySection(identity: IdentityOverride | undefined, usersFile: string): unknown {
  if (identity?.provider === 'oidc') return identity;
  if (identity?.provider === 'several') {
    return { ...identity, providers: identity.providers?.map((entry) => (entry.type === 'local' ? { usersFile, ...entry } : entry)) };
  }
  return { provider: 'local', usersFile, ...identity };
}

export async function startTestGateway(options: StartOptions = {}): Promise<TestGateway> {
  const dir = await mkdtemp(join(tmpdir(), 'gatehouse-test-'));
  const usersFile = join(dir, 'users.yaml');
  const apiKeys = await writeTestUsers(usersFile, options.users ?? DEFAULT_TEST_USERS);
  const port = options.port ?? 0;
  const overrides = options.config ?? {};
  const raw = {
    server: { host: '127.0.0.1', port, ...overrides.server },
    admin: { host: '127.0.0.1', port: 0, ...overrides.admin },
    log: { level: 'trace', ...overrides.log },
    store: { ...overrides.store },
    // A fronted provider's section stands alone: it has no users file; among several, the local entry gets this one.
    identity: identitySection(overrides.identity as IdentityOverride | undefined, usersFile),
    tokens: { issuer: `http://127.0.0.1:${port || 8080}`, keysFile: join(dir, 'keys.json'), ...overrides.tokens },
    proxy: { ...overrides.proxy },
    requests: { ...overrides.requests },
    // Load shedding reads this machine's event loop, which other tests and work make late at random: on only where a test asks for it.
    limits: { loadShedding: { enabled: false }, ...overrides.limits },
    tracing: { ...overrides.tracing },
    authorization: { ...overrides.authorization },
    ...(overrides.cors !== undefined && { cors: overrides.cors }),
    account: { ...overrides.account },
    audit: { ...overrides.audit },
    routes: overrides.routes ?? [],
  };
  const config = parseConfig(raw, { baseDir: dir, env: {} });
  const logs = logSink();
  const gateway = await createGateway(config, {
    logger: logs.logger,
    ...(options.store ? { store: options.store } : {}),
    ...(options.configFile ? { configFile: options.configFile } : {}),
    ...(options.verifyPassword ? { verifyPassword: options.verifyPassword } : {}),
  });
  const { url, adminUrl, healthUrl } = await gateway.listen();
  return {
    gateway,
    url,
    adminUrl,
    healthUrl,
    config,
    dir,
    usersFile,
    logs,
    apiKeys,
    async close() {
      await gateway.close();
      await rm(dir, { recursive: true, force: true });
    },
  };
}

export async function postJson(url: string, body: unknown, headers: Record<string, string> = {}): Promise<Response> {
  return fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
}

export interface TokenSetBody {
  access_token: string;
  refresh_token: string;
  expires_in: number;
  refresh_expires_in: number;
  token_type: string;
}

export async function login(url: string, username: string, password: string): Promise<TokenSetBody> {
  const response = await postJson(`${url}/api/v1/auth/login`, { username, password });
  if (response.status !== 200) throw new Error(`login failed: ${response.status} ${await response.text()}`);
  return (await response.json()) as TokenSetBody;
}

/**
 * A login as a well-behaved client makes it to a gateway just started on a busy machine: a 503 (load shed while its
 * event loop is late) is asked again after its Retry-After (a tenth of a second without one), ten times at most.
 * The last answer, whatever it is, for the test to check.
 */
export async function loginWhenServed(url: string, username: string, password: string): Promise<Response> {
  for (let attempt = 1; ; attempt += 1) {
    const response = await postJson(`${url}/api/v1/auth/login`, { username, password });
    if (response.status !== 503 || attempt === 10) return response;
    const retryAfterS = Number(response.headers.get('retry-after'));
    await new Promise((resolve) => setTimeout(resolve, retryAfterS > 0 ? retryAfterS * 1000 : 100));
  }
}

/** The payload of a JWT, unverified (tests read what the gateway issued). */
export function jwtPayload(token: string): Record<string, unknown> {
  return JSON.parse(Buffer.from(token.split('.')[1]!, 'base64url').toString('utf8')) as Record<string, unknown>;
}
