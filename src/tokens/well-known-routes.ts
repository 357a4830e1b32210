// What a standard client needs to trust our tokens without talking to us
// first: the public signing keys (RFC 7517) and the discovery document
// (OpenID Connect Discovery 1.0 / RFC 8414) that names them.
import type { FastifyPluginAsync } from 'fastify';
import fp from 'fastify-plugin';
import type { JWK } from 'jose';
import type { TokensConfig } from '../config/schema.js';
import { INTROSPECTION_ENDPOINT_PATH, JWKS_PATH, OPENID_CONFIGURATION_PATH, REVOCATION_ENDPOINT_PATH, TOKEN_ENDPOINT_PATH } from '../http/gateway-paths.js';
import { acrValuesSupported, type AcrNames } from './authentication-context.js';
import { canonicalIssuer } from './issuer.js';
import type { KeySet } from './keyset.js';

export interface WellKnownRoutesOptions {
  keys: KeySet;
  tokens: TokensConfig;
}

const CLIENT_AUTH_METHODS = ['client_secret_basic', 'client_secret_post'] as const;

/** Keys change only on rotation, and a verifier that misses a new key refetches on its unknown `kid`. */
const CACHE_CONTROL = 'public, max-age=300';
const JSON_TYPE = 'application/json; charset=utf-8';

/** Exactly the claims the issuer puts into every token (TokenClaims). */
export const CLAIMS_SUPPORTED = ['iss', 'sub', 'aud', 'iat', 'exp', 'jti', 'typ', 'sid', 'preferred_username', 'amr', 'acr', 'auth_time'] as const;

export interface OpenIdConfiguration {
  issuer: string;
  jwks_uri: string;
  token_endpoint: string;
  grant_types_supported: string[];
  token_endpoint_auth_methods_supported: string[];
  introspection_endpoint: string;
  introspection_endpoint_auth_methods_supported: string[];
  revocation_endpoint: string;
  revocation_endpoint_auth_methods_supported: string[];
  response_types_supported: string[];
  subject_types_supported: string[];
  claims_supported: string[];
  /** OpenID Connect Discovery 3: the `acr` names tokens carry and routes ask for (`tokens.acr`), lowest level first. */
  acr_values_supported?: string[];
  /** OpenID Connect Back-Channel Logout 1.0: Gatehouse sends no logout tokens to its clients, and says so. */
  backchannel_logout_supported: false;
  /** RFC 9449 5.1: the algorithms a DPoP proof may be signed with (`tokens.dpop.algorithms`). */
  dpop_signing_alg_values_supported?: string[];
}

/**
 * Exactly what is implemented, nothing more: a token endpoint for public
 * clients and the password and refresh-token grants. There is no
 * authorization endpoint, so no response type (RFC 8414 still requires the
 * member: it is empty), and no ID token, so no ID-token algorithms; the
 * access-token algorithms are on the keys in the JWKS (`alg`), where a
 * verifier looks. No client authentication, so no client-auth algorithms.
 */
export function openIdConfiguration(issuer: string, dpopAlgorithms?: readonly string[], acr?: AcrNames): OpenIdConfiguration {
  const base = canonicalIssuer(issuer);
  return {
    issuer: base,
    jwks_uri: `${base}${JWKS_PATH}`,
    token_endpoint: `${base}${TOKEN_ENDPOINT_PATH}`,
    grant_types_supported: ['password', 'refresh_token'],
    // Public clients: the token endpoint takes no client authentication.
    token_endpoint_auth_methods_supported: ['none'],
    // Introspection and revocation are for the confidential clients of `tokens.clients` (RFC 7662 2.1, RFC 7009 2.1).
    introspection_endpoint: `${base}${INTROSPECTION_ENDPOINT_PATH}`,
    introspection_endpoint_auth_methods_supported: [...CLIENT_AUTH_METHODS],
    revocation_endpoint: `${base}${REVOCATION_ENDPOINT_PATH}`,
    revocation_endpoint_auth_methods_supported: [...CLIENT_AUTH_METHODS],
    response_types_supported: [],
    subject_types_supported: ['public'],
    claims_supported: [...CLAIMS_SUPPORTED],
    ...(acr !== undefined && { acr_values_supported: acrValuesSupported(acr) }),
    // A client cannot register a back-channel logout URI here: sessions end at the gateway itself, on every instance.
    backchannel_logout_supported: false,
    // The token endpoint binds tokens to the key of a DPoP proof sent with the request.
    ...(dpopAlgorithms !== undefined && { dpop_signing_alg_values_supported: [...dpopAlgorithms] }),
  };
}

/** What a published key may hold: its public members and how to use it. Everything else stays home. */
const PUBLISHED_MEMBERS: Readonly<Record<string, readonly string[]>> = {
  OKP: ['kty', 'crv', 'x', 'kid', 'alg', 'use'],
  EC: ['kty', 'crv', 'x', 'y', 'kid', 'alg', 'use'],
  RSA: ['kty', 'n', 'e', 'kid', 'alg', 'use'],
};

/**
 * The JWKS document. KeySet.publicJwks already holds public members only;
 * picking them again here means a private member can reach this endpoint
 * only through two mistakes, not one.
 */
export function jwksDocument(jwks: { keys: readonly JWK[] }): { keys: JWK[] } {
  const keys: JWK[] = [];
  for (const key of jwks.keys) {
    const members = typeof key.kty === 'string' && Object.hasOwn(PUBLISHED_MEMBERS, key.kty) ? PUBLISHED_MEMBERS[key.kty]! : [];
    if (members.length === 0) continue;
    const source = key as Record<string, unknown>;
    const published: Record<string, unknown> = {};
    for (const member of members) if (source[member] !== undefined) published[member] = source[member];
    keys.push(published as JWK);
  }
  return { keys };
}

/**
 * Serialises a document once per change of its source. The key set hands out
 * the same objects until a rotation, so identity is the change signal.
 */
function memoizedJson<S extends object>(build: (source: S) => unknown): (source: S) => string {
  let last: S | undefined;
  let json = '';
  return (source) => {
    if (source !== last) {
      json = JSON.stringify(build(source));
      last = source;
    }
    return json;
  };
}

const wellKnownRoutesPlugin: FastifyPluginAsync<WellKnownRoutesOptions> = async (fastify, { keys, tokens }) => {
  const jwksJson = memoizedJson(jwksDocument);
  const configurationJson = JSON.stringify(openIdConfiguration(tokens.issuer, tokens.dpop.algorithms, tokens.acr));

  fastify.get(JWKS_PATH, async (_request, reply) => {
    return reply.header('cache-control', CACHE_CONTROL).type(JSON_TYPE).send(jwksJson(keys.publicJwks()));
  });

  fastify.get(OPENID_CONFIGURATION_PATH, async (_request, reply) => {
    return reply.header('cache-control', CACHE_CONTROL).type(JSON_TYPE).send(configurationJson);
  });
};

export const wellKnownRoutes = fp(wellKnownRoutesPlugin, { name: 'gatehouse-well-known', fastify: '5.x' });
