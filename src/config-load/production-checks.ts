// The production checklist as code (`gatehouse check-config --production`):
// what a sound config may still hold that no production deployment should,
// each check a named function that reads a checked config (and the files it
// names) and returns its findings, each with the setting and its fix. Checks
// are a list so that one more is one more entry; a check may be async (one
// that asks a store). Nothing here writes a file; no secret is ever quoted.
import { readFileSync } from 'node:fs';
import { dirname, isAbsolute, relative } from 'node:path';
import { providerSecretEnv } from '../config/providers-schema.js';
import type { Config, OidcIdentityConfig } from '../config/schema.js';
import { judgeSecret, SECRET_ADVICE } from '../core/secret-strength.js';
import { parseUsersFile, UsersFileError } from '../users/users-file.js';
import { EVICTION_FIX, readEvictionPoliciesAt, type MasterEvictionPolicy } from '../store/eviction-policy.js';

export interface ProductionFinding {
  /** The field to change, as problems name it (`identity.usersFile`). */
  setting: string;
  problem: string;
  fix: string;
}

export interface ProductionContext {
  config: Config;
  /** The config file, resolved: its folder is the config folder. */
  file: string;
}

export interface ProductionCheck {
  /** Stable and greppable: `demo-user`, `memory-store`, … */
  name: string;
  run(context: ProductionContext): ProductionFinding[] | Promise<ProductionFinding[]>;
}

/**
 * The quick start's demo user (config/users.yaml): its password and API key
 * are printed in the README. Kept here, not read from that file, because the
 * image does not ship it; a test holds the two equal.
 */
export const DEMO_USER = {
  name: 'demo',
  id: 'dabb7c1b-da8b-4638-8c63-231723ed48cb',
  passwordHash: 'scrypt$ln=15,r=8,p=1$Wx75AQC8w7nphhlxtC7z4A$UDC4bsy4SZftFkaqOGSbF6-RMADY9j5Eey_Gy5UdF2g',
  apiKeyHash: '826u_M0cl9RMWtpImIb2X8N-WNCkJK1i_kxy1VtVQfk',
} as const;

/** The demo user, or its API key under any user, in the users file (with `usersIn: store`, the file that seeds the store). */
export const demoUserCheck: ProductionCheck = {
  name: 'demo-user',
  run({ config }) {
    const local = localProviderOf(config);
    if (local === undefined) return [];
    const setting = `${local.at}.usersFile`;
    let text: string;
    try {
      text = readFileSync(local.usersFile, 'utf8');
    } catch {
      return []; // the environment checks judged the file already: a missing one may be fine
    }
    let users;
    try {
      users = parseUsersFile(text, local.usersFile).users;
    } catch (error) {
      if (error instanceof UsersFileError) return [];
      throw error;
    }
    const findings: ProductionFinding[] = [];
    for (const [name, user] of Object.entries(users)) {
      if (user.id === DEMO_USER.id || user.passwordHash === DEMO_USER.passwordHash) {
        findings.push({
          setting,
          problem: `holds the demo user ${JSON.stringify(name)} of config/users.yaml, whose password the README prints`,
          fix: `gatehouse users remove ${name}, then add your own users with gatehouse users add`,
        });
      } else if (user.apiKeys.some((key) => key.hash === DEMO_USER.apiKeyHash)) {
        findings.push({
          setting,
          problem: `user ${JSON.stringify(name)} holds the demo API key of config/users.yaml, which the README prints`,
          fix: `gatehouse apikeys list ${name}, then gatehouse apikeys revoke KEYID for the README demo key`,
        });
      }
    }
    return findings;
  },
};

export const memoryStoreCheck: ProductionCheck = {
  name: 'memory-store',
  run: ({ config }) =>
    config.store.url
      ? []
      : [
          {
            setting: 'store.url',
            problem: 'not set: the in-memory store loses sessions and 202 records on every restart, and shares nothing between instances',
            fix: 'set store.url (or REDIS_URL) to a Redis with persistence (appendonly yes) and maxmemory-policy noeviction',
          },
        ],
};

const LOOPBACK = /^(localhost|127(\.\d{1,3}){3}|::1|\[::1\])$/i;

/** Tokens name their issuer; clients that reach the gateway from elsewhere reach it over TLS, at the public URL. */
export const httpIssuerCheck: ProductionCheck = {
  name: 'http-issuer',
  run({ config }) {
    const issuer = config.tokens.issuer;
    if (issuer === undefined || !issuer.startsWith('http:') || LOOPBACK.test(config.server.host)) return [];
    return [
      {
        setting: 'tokens.issuer',
        problem: `${issuer} is plain http while server.host ${config.server.host} is reachable from other hosts`,
        fix: 'set tokens.issuer (or GATEHOUSE_ISSUER) to the https:// URL clients use, with TLS at the ingress or in server.tls',
      },
    ];
  },
};

/** The service token: its strength is the schema's (every start judges it); here, its absence where it is needed. */
export const serviceTokenCheck: ProductionCheck = {
  name: 'service-token',
  run({ config }) {
    const captures = config.routes.some((route) => route.async.capture);
    if (config.requests.serviceToken !== undefined || (config.store.url === undefined && !captures)) return [];
    return [
      {
        setting: 'requests.serviceToken',
        problem: 'not set: the internal status API refuses every backend report, and with Redis the public keys instances publish are not sealed',
        fix: `set GATEHOUSE_SERVICE_TOKEN, the same on every instance: ${SECRET_ADVICE}`,
      },
    ];
  },
};

/** Where the local users sit: `identity` itself, or their entry among several providers. */
function localProviderOf(config: Config): { usersFile: string; at: string } | undefined {
  const { identity } = config;
  if (identity.provider === 'local') return { usersFile: identity.usersFile, at: 'identity' };
  if (identity.provider !== 'several') return undefined;
  const index = identity.providers.findIndex((entry) => entry.type === 'local');
  const entry = identity.providers[index];
  return entry?.type === 'local' ? { usersFile: entry.usersFile, at: `identity.providers[${index}]` } : undefined;
}

/** Every fronted OpenID Provider with where it sits and the variable its client secret may come from. */
function openIdProvidersOf(config: Config): Array<{ settings: Pick<OidcIdentityConfig, 'issuer' | 'clientSecret'>; at: string; secretEnv: string }> {
  const { identity } = config;
  if (identity.provider === 'oidc') return [{ settings: identity, at: 'identity', secretEnv: 'GATEHOUSE_OIDC_CLIENT_SECRET' }];
  if (identity.provider !== 'several') return [];
  return identity.providers.flatMap((entry, index) =>
    entry.type === 'oidc' ? [{ settings: entry, at: `identity.providers[${index}]`, secretEnv: providerSecretEnv(entry.name) }] : [],
  );
}

/** A fronted provider's client secret: the provider issues it, so a start takes any; production should not. */
export const providerSecretCheck: ProductionCheck = {
  name: 'weak-client-secret',
  run({ config }) {
    return openIdProvidersOf(config).flatMap(({ settings, at, secretEnv }) => {
      if (settings.clientSecret === undefined) return [];
      const verdict = judgeSecret(settings.clientSecret);
      if (verdict.strong) return [];
      return [
        {
          setting: `${at}.clientSecret`,
          problem: verdict.weakness,
          fix: `have the OpenID Provider issue a new random secret for this client, and set it in ${secretEnv}`,
        },
      ];
    });
  },
};

/** A provider's discovery, keys and token endpoint over plain http: anyone on the way could hand the gateway keys of their own. */
export const httpProviderIssuerCheck: ProductionCheck = {
  name: 'http-provider-issuer',
  run({ config }) {
    return openIdProvidersOf(config).flatMap(({ settings, at }) => {
      const { protocol, hostname } = new URL(settings.issuer);
      if (protocol !== 'http:' || LOOPBACK.test(hostname)) return [];
      return [
        {
          setting: `${at}.issuer`,
          problem: `${settings.issuer} is plain http: its keys, discovery and token answers can be changed on the way`,
          fix: 'use the https:// issuer the OpenID Provider publishes',
        },
      ];
    });
  },
};

/** The private signing keys do not belong where configs go: a folder that is shared, mounted read-only or committed. */
export const keysFileCheck: ProductionCheck = {
  name: 'keys-file-in-config-folder',
  run({ config, file }) {
    const keysFile = config.tokens.keysFile;
    if (keysFile === undefined) return [];
    const inside = relative(dirname(file), keysFile);
    if (inside.startsWith('..') || isAbsolute(inside)) return [];
    return [
      {
        setting: 'tokens.keysFile',
        problem: `${keysFile} is inside the config folder ${dirname(file)}, and holds the private signing keys`,
        fix: 'put it on a data volume outside the config folder, e.g. /var/lib/gatehouse/keys.json',
      },
    ];
  },
};

/**
 * A Redis that deletes keys when its memory is full deletes sessions, records,
 * published keys and users without a word. Asked only when it answers: a
 * Redis out of reach from where the check runs (an operator's machine) is no
 * finding, and the gateway itself says so at every start.
 */
export const evictingRedisCheck: ProductionCheck = {
  name: 'evicting-redis',
  async run({ config }) {
    if (config.store.url === undefined) return [];
    let masters: MasterEvictionPolicy[];
    try {
      masters = await readEvictionPoliciesAt(config.store.url);
    } catch {
      return [];
    }
    return masters
      .filter((master) => master.evicts === true)
      .map((master) => ({
        setting: 'store.url',
        problem:
          `the Redis master at ${master.address} has maxmemory-policy ${master.policy ?? ''}: ` +
          'when its memory is full it deletes sessions, 202 records, published keys and users',
        fix: EVICTION_FIX,
      }));
  },
};

/**
 * The checklist, in the order findings are listed. `server.workers > 1` on
 * the in-memory store is not among them: every start refuses it already.
 */
export const PRODUCTION_CHECKS: readonly ProductionCheck[] = [
  demoUserCheck,
  memoryStoreCheck,
  httpIssuerCheck,
  serviceTokenCheck,
  providerSecretCheck,
  httpProviderIssuerCheck,
  keysFileCheck,
  evictingRedisCheck,
];

/** Every finding of every check, each line as `check-config --production` prints it. */
export async function productionFindings(context: ProductionContext, checks: readonly ProductionCheck[] = PRODUCTION_CHECKS): Promise<string[]> {
  const lines: string[] = [];
  for (const check of checks) {
    for (const finding of await check.run(context)) lines.push(`${finding.setting}: ${finding.problem} [${check.name}]; fix: ${finding.fix}`);
  }
  return lines;
}
