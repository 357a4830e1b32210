import { once } from 'node:events';
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Fastify, { type FastifyInstance } from 'fastify';
import { createRemoteJWKSet, jwtVerify } from 'jose';
import * as oidc from 'openid-client';
import { pino } from 'pino';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { TokensConfig } from '../../src/config/schema.js';
import { TokenIssuer } from '../../src/tokens/issuer.js';
import { rotateKeys } from '../../src/tokens/key-rotation.js';
import { loadKeySet, type KeySet, type WatchedKeySet } from '../../src/tokens/keyset.js';
import { jwksDocument, openIdConfiguration, wellKnownRoutes } from '../../src/tokens/well-known-routes.js';

const PRIVATE_MEMBERS = ['d', 'p', 'q', 'dp', 'dq', 'qi'];
const RETAIN_S = 3600;

let folder: string;
const cleanup: Array<() => unknown> = [];

beforeEach(async () => {
  folder = await mkdtemp(join(tmpdir(), 'gatehouse-well-known-'));
});

afterEach(async () => {
  for (const step of cleanup.splice(0).reverse()) await step();
  await rm(folder, { recursive: true, force: true });
});

function tokensConfig(overrides: Partial<TokensConfig> = {}): TokensConfig {
  return {
    issuer: 'https://gw.example.com',
    audience: 'gatehouse',
    accessTokenTtlS: 60,
    refreshTokenTtlS: RETAIN_S,
    algorithm: 'EdDSA',
    keysFile: join(folder, 'keys.json'),
    clockToleranceS: 5,
    clients: [],
    cacheMaxEntries: 100,
    dpop: { policy: 'optional', algorithms: ['ES256', 'EdDSA', 'PS256', 'RS256'], proofWindowS: 60, requireNonce: false, nonceRotateS: 300 },
    acr: { password: 'urn:gatehouse:acr:password', mfa: 'urn:gatehouse:acr:mfa' },
    ...overrides,
  };
}

async function keySet(tokens: TokensConfig, watch = false): Promise<WatchedKeySet> {
  const keys = await loadKeySet({ file: tokens.keysFile!, algorithm: tokens.algorithm, retainS: RETAIN_S, logger: pino({ level: 'silent' }), watch });
  cleanup.push(() => keys.close());
  return keys;
}

async function app(keys: KeySet, tokens: TokensConfig): Promise<FastifyInstance> {
  const fastify = Fastify();
  await fastify.register(wellKnownRoutes, { keys, tokens });
  await fastify.ready();
  cleanup.push(() => fastify.close());
  return fastify;
}

describe('GET /.well-known/jwks.json', () => {
  it('serves the public keys, cacheable for five minutes', async () => {
    const tokens = tokensConfig({ algorithm: 'RS256' });
    const keys = await keySet(tokens);
    const response = await (await app(keys, tokens)).inject({ method: 'GET', url: '/.well-known/jwks.json' });

    expect(response.statusCode).toBe(200);
    expect(response.headers['content-type']).toBe('application/json; charset=utf-8');
    expect(response.headers['cache-control']).toBe('public, max-age=300');
    const body = response.json() as { keys: Array<Record<string, unknown>> };
    expect(body).toEqual(keys.publicJwks());
    expect(body.keys).toHaveLength(1);
    expect(body.keys[0]).toMatchObject({ kty: 'RSA', kid: keys.signingKey().kid, alg: 'RS256', use: 'sig', e: 'AQAB' });
    for (const member of PRIVATE_MEMBERS) expect(body.keys[0]).not.toHaveProperty(member);
  });

  it('shows a rotation picked up from disk', async () => {
    const tokens = tokensConfig();
    const keys = await keySet(tokens, true);
    const fastify = await app(keys, tokens);
    const oldKid = keys.signingKey().kid;
    const kidsServed = async () =>
      ((await fastify.inject({ method: 'GET', url: '/.well-known/jwks.json' })).json() as { keys: Array<{ kid: string }> }).keys.map((k) => k.kid);
    expect(await kidsServed()).toEqual([oldKid]);

    const reloaded = once(keys, 'reload');
    const { kid } = await rotateKeys({ file: tokens.keysFile!, algorithm: 'ES256', retainS: RETAIN_S });
    expect(await reloaded).toEqual([true]);
    expect(await kidsServed()).toEqual([kid, oldKid]);
  });

  it('publishes only public members even if handed a private key', () => {
    const okp = { kty: 'OKP', crv: 'Ed25519', x: 'x', kid: 'k1', alg: 'EdDSA', use: 'sig' };
    const ec = { kty: 'EC', crv: 'P-256', x: 'x', y: 'y', kid: 'k2', alg: 'ES256', use: 'sig' };
    const rsa = { kty: 'RSA', n: 'n', e: 'AQAB', kid: 'k3', alg: 'RS256', use: 'sig' };
    const secret = { d: 'd', p: 'p', q: 'q', dp: 'dp', dq: 'dq', qi: 'qi', key_ops: ['sign'], ext: true };
    const document = jwksDocument({
      keys: [
        { ...okp, ...secret },
        { ...ec, ...secret },
        { ...rsa, ...secret },
        { kty: 'oct', k: 'secret' },
      ],
    });
    expect(document).toEqual({ keys: [okp, ec, rsa] });
  });
});

describe('GET /.well-known/openid-configuration', () => {
  const expected = (issuer: string) => ({
    issuer,
    jwks_uri: `${issuer}/.well-known/jwks.json`,
    token_endpoint: `${issuer}/oauth/token`,
    grant_types_supported: ['password', 'refresh_token'],
    token_endpoint_auth_methods_supported: ['none'],
    introspection_endpoint: `${issuer}/oauth/introspect`,
    introspection_endpoint_auth_methods_supported: ['client_secret_basic', 'client_secret_post'],
    revocation_endpoint: `${issuer}/oauth/revoke`,
    revocation_endpoint_auth_methods_supported: ['client_secret_basic', 'client_secret_post'],
    response_types_supported: [],
    subject_types_supported: ['public'],
    claims_supported: ['iss', 'sub', 'aud', 'iat', 'exp', 'jti', 'typ', 'sid', 'preferred_username', 'amr', 'acr', 'auth_time'],
    // OpenID Connect Discovery 3: the levels of tokens.acr, lowest first.
    acr_values_supported: ['urn:gatehouse:acr:password', 'urn:gatehouse:acr:mfa'],
    // Honest: Gatehouse as a provider sends no back-channel logout tokens.
    backchannel_logout_supported: false,
    // RFC 9449 5.1: the algorithms of tokens.dpop.algorithms.
    dpop_signing_alg_values_supported: ['ES256', 'EdDSA', 'PS256', 'RS256'],
  });

  it('describes the issuer and its endpoints, and advertises no ID tokens or response types it does not implement', async () => {
    const tokens = tokensConfig({ algorithm: 'ES256' });
    const keys = await keySet(tokens);
    const response = await (await app(keys, tokens)).inject({ method: 'GET', url: '/.well-known/openid-configuration' });
    expect(response.statusCode).toBe(200);
    expect(response.headers['content-type']).toBe('application/json; charset=utf-8');
    expect(response.json()).toEqual(expected('https://gw.example.com'));
  });

  it('names the issuer without a trailing slash, however the config writes it', async () => {
    const tokens = tokensConfig({ issuer: 'https://gw.example.com/auth/' });
    const keys = await keySet(tokens);
    const response = await (await app(keys, tokens)).inject({ method: 'GET', url: '/.well-known/openid-configuration' });
    expect(response.json()).toEqual(expected('https://gw.example.com/auth'));
  });

  it('lists every algorithm that still verifies after an algorithm change, on the keys of the JWKS', async () => {
    await keySet(tokensConfig({ algorithm: 'EdDSA' }));
    const tokens = tokensConfig({ algorithm: 'RS256' });
    const keys = await keySet(tokens);
    const response = await (await app(keys, tokens)).inject({ method: 'GET', url: '/.well-known/jwks.json' });
    expect((response.json() as { keys: Array<{ alg: string }> }).keys.map((key) => key.alg)).toEqual(['RS256', 'EdDSA']);
  });

  it('is built by a pure function', () => {
    expect(
      openIdConfiguration('http://localhost:8080//', ['ES256', 'EdDSA', 'PS256', 'RS256'], {
        password: 'urn:gatehouse:acr:password',
        mfa: 'urn:gatehouse:acr:mfa',
      }),
    ).toEqual(expected('http://localhost:8080'));
  });
});

describe('standard clients', () => {
  /** A port for the issuer URL before the server listens on it (discovery checks the issuer exactly). */
  async function freePort(): Promise<number> {
    const server = createServer();
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as { port: number };
    await new Promise((resolve) => server.close(resolve));
    return port;
  }

  it('openid-client discovers the issuer and jose verifies our tokens with the served JWKS alone', async () => {
    const port = await freePort();
    const tokens = tokensConfig({ issuer: `http://127.0.0.1:${port}` });
    const keys = await keySet(tokens);
    const fastify = await app(keys, tokens);
    await fastify.listen({ port, host: '127.0.0.1' });

    const configuration = await oidc.discovery(new URL(tokens.issuer), 'any-client', undefined, oidc.None(), {
      execute: [oidc.allowInsecureRequests],
    });
    const metadata = configuration.serverMetadata();
    expect(metadata.issuer).toBe(tokens.issuer);
    expect(metadata.token_endpoint).toBe(`${tokens.issuer}/oauth/token`);

    const issuer = new TokenIssuer({ keys, issuer: tokens.issuer, audience: tokens.audience, accessTokenTtlS: 60, refreshTokenTtlS: RETAIN_S });
    const now = Date.now();
    const set = await issuer.issueTokenSet({ sid: 's', sub: 'u-1', username: 'alice', method: 'pwd', createdAt: now, expiresAt: now + RETAIN_S * 1000 });
    const jwks = createRemoteJWKSet(new URL(metadata.jwks_uri!));
    const { payload, protectedHeader } = await jwtVerify(set.access_token, jwks, {
      issuer: metadata.issuer,
      audience: tokens.audience,
    });
    expect(payload).toMatchObject({ sub: 'u-1', typ: 'Bearer' });
    expect(protectedHeader.kid).toBe(keys.signingKey().kid);
  });
});
