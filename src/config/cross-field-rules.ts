// Rules that weigh one part of a config against another: route rules name
// only declared roles and scopes, each way of authenticating at a provider has
// its own credential, local mode has its keys file, workers need a shared
// store, the head's deadline fits in the request's. Pure functions of the
// parsed value, run by the schema.
import type { z } from 'zod';
import { providerSecretEnv, signsOwnTokens } from './providers-schema.js';

type Issues = z.core.$ZodRawIssue[];

/**
 * Route rules name only declared roles and scopes (`authorization.roles`,
 * `authorization.scopes`): a rule naming another is a typo that would refuse
 * everyone, or a role nobody can be given. A rule on a public route could
 * never be met by a caller it does not know.
 */
interface NamedLists {
  anyRole?: string[] | undefined;
  allRoles?: string[] | undefined;
  scopes?: string[] | undefined;
  clientSubjects?: string[] | undefined;
}

/** `clientCertificates`: whether the listener asks clients for certificates at all (a rule naming subjects needs it). */
export function checkRouteRules(
  routes: ReadonlyArray<{ auth?: string | undefined; authorize?: (NamedLists & { methods?: Partial<Record<string, NamedLists>> | undefined }) | undefined }>,
  declared: { roles: readonly string[]; scopes: readonly string[] },
  issues: Issues,
  clientCertificates = false,
): void {
  const roles = new Set(declared.roles);
  const scopes = new Set(declared.scopes);
  routes.forEach((route, index) => {
    const authorize = route.authorize;
    if (authorize === undefined) return;
    const at = ['routes', index, 'authorize'];
    if (route.auth === 'none') {
      issues.push({ code: 'custom', path: at, message: 'a public route (auth: none) cannot have rules: nobody is known there', input: authorize });
    }
    const rules: Array<[PropertyKey[], NamedLists]> = [
      [at, authorize],
      ...Object.entries(authorize.methods ?? {}).map(([method, rule]): [PropertyKey[], NamedLists] => [[...at, 'methods', method], rule ?? {}]),
    ];
    for (const [path, rule] of rules) {
      for (const list of ['anyRole', 'allRoles'] as const) {
        (rule[list] ?? []).forEach((role, i) => {
          if (!roles.has(role))
            issues.push({ code: 'custom', path: [...path, list, i], message: `unknown role "${role}": declare it in authorization.roles`, input: role });
        });
      }
      (rule.scopes ?? []).forEach((scope, i) => {
        if (!scopes.has(scope))
          issues.push({ code: 'custom', path: [...path, 'scopes', i], message: `unknown scope "${scope}": declare it in authorization.scopes`, input: scope });
      });
      if (rule.clientSubjects !== undefined && !clientCertificates) {
        const message = 'no client would ever have a certificate: set server.tls.clientCertificates';
        issues.push({ code: 'custom', path: [...path, 'clientSubjects'], message, input: rule.clientSubjects });
      }
    }
  });
}

interface ProviderCredentials {
  name?: string;
  clientAuth?: string;
  clientSecret?: string | undefined;
  privateKeyFile?: string | undefined;
}

/** The identity section's providers with where each sits: the section itself, or each of `providers` (`several`). */
interface IdentitySection {
  provider: string;
  providers?: ReadonlyArray<{ type: string }>;
}

function providersOf<T>(identity: IdentitySection, kind: 'local' | 'oidc'): Array<{ entry: T; at: Array<string | number> }> {
  if (identity.provider === kind) return [{ entry: identity as T, at: ['identity'] }];
  if (identity.provider !== 'several') return [];
  return identity.providers!.flatMap((entry, index) => (entry.type === kind ? [{ entry: entry as T, at: ['identity', 'providers', index] }] : []));
}

/** Each way of authenticating at a provider needs its own credential, and only it. */
export function checkProviderCredentials(identity: IdentitySection, issues: Issues): void {
  for (const { entry, at } of providersOf<ProviderCredentials>(identity, 'oidc')) {
    const needsKey = entry.clientAuth === 'private_key_jwt';
    if (needsKey && entry.privateKeyFile === undefined) {
      issues.push({ code: 'custom', path: [...at, 'privateKeyFile'], message: "private_key_jwt needs the client's private key file", input: undefined });
    }
    if (!needsKey && entry.clientSecret === undefined) {
      const fromEnv = ` (or env ${at.length === 1 ? 'GATEHOUSE_OIDC_CLIENT_SECRET' : providerSecretEnv(entry.name ?? '')})`;
      issues.push({ code: 'custom', path: [...at, 'clientSecret'], message: `${entry.clientAuth} needs the client secret${fromEnv}`, input: undefined });
    }
  }
}

/** Users held in the store need one that is shared: Redis. */
export function checkUsersStore(identity: IdentitySection, store: { url?: string | undefined }, issues: Issues): void {
  for (const { entry, at } of providersOf<{ usersIn?: string }>(identity, 'local')) {
    if (entry.usersIn !== 'store' || store.url) continue;
    issues.push({
      code: 'custom',
      path: [...at, 'usersIn'],
      message: 'store needs store.url (Redis): the in-memory store is not shared, and would lose the users at every restart',
      input: entry.usersIn,
    });
  }
}

/** Local mode signs its own tokens and needs the keys file for it; a fronted provider (oidc) signs them itself. */
export function checkKeysFile(config: unknown, issues: Issues): void {
  // Read defensively: run even when other fields failed, the value is as the file wrote it.
  const { identity, tokens } = (config ?? {}) as { identity?: { provider?: unknown; providers?: unknown } | null; tokens?: unknown };
  if (!signsOwnTokens(identity) || (tokens !== undefined && (tokens === null || typeof tokens !== 'object'))) return;
  if ((tokens as { keysFile?: unknown } | undefined)?.keysFile === undefined) {
    // Worded by the loader from the field's own help (`tokens.keysFile is required: …`), as for any field left out.
    issues.push({ code: 'custom', path: ['tokens', 'keysFile'], message: 'is required in local mode', input: undefined });
  }
}

export function checkServerLimits(
  server: { workers: number | 'auto'; headersTimeoutMs: number; requestTimeoutMs: number },
  store: { url?: string | undefined },
  issues: Issues,
): void {
  // Workers do not share memory: sessions and statuses must live in Redis.
  if (server.workers !== 1 && !store.url) {
    issues.push({
      code: 'custom',
      path: ['server', 'workers'],
      message: 'more than one worker needs store.url (Redis): workers share no memory',
      input: server.workers,
    });
  }
  // The head is part of the request: Node refuses a head deadline past the whole one.
  const { headersTimeoutMs, requestTimeoutMs } = server;
  if (headersTimeoutMs > requestTimeoutMs) {
    issues.push({
      code: 'custom',
      path: ['server', 'headersTimeoutMs'],
      message: `must be at most server.requestTimeoutMs (${requestTimeoutMs})`,
      input: headersTimeoutMs,
    });
  }
}

/** A health-only listener (`server.health.on: own`) needs a port of its own: the public or admin listener's would fail the start. */
export function checkHealthListener(
  server: { port: number; health: { on: string; port: number } },
  admin: { enabled: boolean; port: number },
  issues: Issues,
): void {
  const { on, port } = server.health;
  if (on !== 'own' || port === 0) return;
  const taken = port === server.port ? 'server.port' : admin.enabled && port === admin.port ? 'admin.port' : undefined;
  if (taken !== undefined) issues.push({ code: 'custom', path: ['server', 'health', 'port'], message: `must differ from ${taken} (${port})`, input: port });
}
