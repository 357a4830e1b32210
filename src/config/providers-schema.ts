// Several identity providers at once (`identity.provider: several`): the
// local users and any number of OpenID Providers, each named, each with the
// fields its single-provider mode has. Names and issuers are unique, at most
// one entry is local, and the default names an entry.
// Why: docs/decisions/0025-several-identity-providers.md
import { z } from 'zod';
import { help } from './schema-primitives.js';
import { LocalIdentitySchema, OidcIdentitySchema } from './identity-schema.js';

/** A provider's name: what a login's `provider` field, a route's `providers` and the identity headers say. */
export const ProviderNameSchema = z
  .string()
  .regex(/^[a-z][a-z0-9-]{0,39}$/, { error: 'a provider name is lower-case letters, digits and dashes, starting with a letter (at most 40)' })
  .meta(help('the provider name logins and routes use', 'staff'));

const name = ProviderNameSchema;

/**
 * The variable an OpenID Provider entry's client secret may come from, as
 * `GATEHOUSE_OIDC_CLIENT_SECRET` is the single provider's: the name upper-cased,
 * dashes as underscores (`break-glass` → `GATEHOUSE_PROVIDER_BREAK_GLASS_CLIENT_SECRET`).
 * Names hold no underscore, so no two providers share a variable.
 */
export function providerSecretEnv(providerName: string): string {
  return `GATEHOUSE_PROVIDER_${providerName.toUpperCase().replaceAll('-', '_')}_CLIENT_SECRET`;
}

/** Gatehouse's own users among several providers: the fields of `identity.provider: local`. */
export const LocalProviderEntrySchema = LocalIdentitySchema.omit({ provider: true }).extend({
  name,
  /** Gatehouse's own users, signed into Gatehouse's own tokens (`tokens.issuer`). */
  type: z.literal('local').meta(help('local (Gatehouse’s own users) or oidc (an OpenID Provider)', 'local')),
});

/** An OpenID Provider among several: the fields of `identity.provider: oidc`. */
export const OidcProviderEntrySchema = OidcIdentitySchema.omit({ provider: true }).extend({
  name,
  /** An OpenID Provider: its tokens are known by their `iss`, its issuer. */
  type: z.literal('oidc').meta(help('local (Gatehouse’s own users) or oidc (an OpenID Provider)', 'oidc')),
});

export type LocalProviderEntry = z.infer<typeof LocalProviderEntrySchema>;
export type OidcProviderEntry = z.infer<typeof OidcProviderEntrySchema>;
export type ProviderEntry = LocalProviderEntry | OidcProviderEntry;

/**
 * Several providers at once: a bearer token's `iss` picks its provider, a
 * login names one (`provider`) or gets `defaultProvider`, a route may trust
 * only some (`routes[].providers`).
 */
export const SeveralIdentitySchema = z
  .strictObject({
    /** Several providers, listed in `providers`. */
    provider: z.literal('several').meta(help('who the users are: local, oidc, or several (a list of named providers)', 'several')),
    /**
     * The providers, each with a `name`, a `type` (`local` or `oidc`) and the
     * fields of `identity.provider: local` or `oidc` above; at most one `local`.
     */
    providers: z
      .array(z.discriminatedUnion('type', [LocalProviderEntrySchema, OidcProviderEntrySchema]))
      .min(1)
      .meta(help('the named providers', '[{name: staff, type: oidc, issuer: https://login.example.com/realms/staff, clientId: gatehouse}]')),
    /** The provider of a login that names none (clients written for one provider need no change). Absent: the first listed. */
    defaultProvider: name.optional(),
  })
  .superRefine((value, ctx) => {
    const names = new Set<string>();
    const issuers = new Set<string>();
    let locals = 0;
    value.providers.forEach((entry, index) => {
      if (names.has(entry.name)) ctx.addIssue({ code: 'custom', path: ['providers', index, 'name'], message: `the name ${entry.name} is used twice` });
      names.add(entry.name);
      if (entry.type === 'local' && ++locals > 1) {
        ctx.addIssue({ code: 'custom', path: ['providers', index, 'type'], message: 'at most one provider is local' });
      }
      if (entry.type !== 'oidc') return;
      const issuer = withoutTrailingSlash(entry.issuer);
      if (issuers.has(issuer)) ctx.addIssue({ code: 'custom', path: ['providers', index, 'issuer'], message: `the issuer ${entry.issuer} is used twice` });
      issuers.add(issuer);
    });
    if (value.defaultProvider !== undefined && !names.has(value.defaultProvider)) {
      ctx.addIssue({ code: 'custom', path: ['defaultProvider'], message: `names no provider (${[...names].join(', ')})` });
    }
  });

/** Issuers are compared exactly, but a trailing slash written in the config does not make a second one. */
function withoutTrailingSlash(issuer: string): string {
  return issuer.endsWith('/') ? issuer.slice(0, -1) : issuer;
}

/**
 * No provider may claim Gatehouse's own issuer (`tokens.issuer`): its tokens
 * would be taken for Gatehouse's, or Gatehouse's for its (issuer mix-up).
 */
export function checkProviderIssuers(
  identity: { provider: string; providers?: ReadonlyArray<{ type: string; issuer?: string }> },
  tokens: { issuer: string },
  issues: z.core.$ZodRawIssue[],
): void {
  if (identity.provider !== 'several') return;
  const own = withoutTrailingSlash(tokens.issuer);
  identity.providers!.forEach((entry, index) => {
    if (entry.type !== 'oidc' || withoutTrailingSlash(entry.issuer!) !== own) return;
    issues.push({
      code: 'custom',
      path: ['identity', 'providers', index, 'issuer'],
      message: "is Gatehouse's own issuer (tokens.issuer)",
      input: entry.issuer,
    });
  });
}

/**
 * Who the users are: Gatehouse's own users file (`local`), an OpenID Provider
 * it fronts (`oidc`), or several of them by name (`several`); `provider` says
 * which, and which fields apply.
 */
export const IdentitySchema = z
  .discriminatedUnion('provider', [LocalIdentitySchema, OidcIdentitySchema, SeveralIdentitySchema])
  .meta(help('who the users are', '{provider: local, usersFile: ./users.yaml}'));

/** The local users' settings: of `identity.provider: local`, or of the local entry among several; undefined without local users. */
export function localUsersOf(identity: z.infer<typeof IdentitySchema>): { usersFile: string; usersIn: 'file' | 'store' } | undefined {
  if (identity.provider === 'local') return identity;
  if (identity.provider !== 'several') return undefined;
  return identity.providers.find((entry): entry is LocalProviderEntry => entry.type === 'local');
}

/** Local mode, or several providers with a local one among them: Gatehouse signs tokens of its own. Read defensively (the value may not have parsed). */
export function signsOwnTokens(identity: { provider?: unknown; providers?: unknown } | null | undefined): boolean {
  if (identity?.provider === 'local') return true;
  if (identity?.provider !== 'several' || !Array.isArray(identity.providers)) return false;
  return identity.providers.some((entry: unknown) => (entry as { type?: unknown } | null)?.type === 'local');
}

/** A route's `providers` name configured providers, and only where there are several. */
export function checkRouteProviders(
  identity: { provider: string; providers?: ReadonlyArray<{ name: string }> },
  routes: ReadonlyArray<{ providers?: readonly string[] | undefined }>,
  issues: z.core.$ZodRawIssue[],
): void {
  const names = new Set(identity.providers?.map((entry) => entry.name));
  routes.forEach((route, index) => {
    route.providers?.forEach((name, i) => {
      if (names.has(name)) return;
      const message = identity.provider === 'several' ? `names no provider (${[...names].join(', ')})` : 'needs several providers (identity.provider: several)';
      issues.push({ code: 'custom', path: ['routes', index, 'providers', i], message, input: name });
    });
  });
}
