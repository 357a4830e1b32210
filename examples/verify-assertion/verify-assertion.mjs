// Verifies the signed identity Gatehouse sends a backend (a route's
// `identityAssertion`): one signature, checked against the gateway's public
// keys (its JWKS), instead of trusting `x-gatehouse-*` headers that anything
// able to reach the backend could write. Needs only `jose` (npm install jose).
//
//   const verify = assertionVerifier({ issuer: 'https://gateway.example.com', audience: 'orders' });
//   const caller = await verify(req.headers); // throws when absent, forged, expired or for another backend
import { createRemoteJWKSet, jwtVerify } from 'jose';

/**
 * @param {object} options
 * @param {string} options.issuer the gateway's `tokens.issuer` (the assertion's `iss`)
 * @param {string} options.audience the route's name, or its `identityAssertion.audience`
 * @param {string} [options.jwksUrl] where the gateway publishes its keys; default: the issuer's /.well-known/jwks.json
 * @param {string} [options.header] `proxy.identityHeaders.assertion`; default x-gatehouse-assertion
 * @returns {(headers: Record<string, string | string[] | undefined>) => Promise<import('jose').JWTPayload>}
 */
export function assertionVerifier({ issuer, audience, jwksUrl, header = 'x-gatehouse-assertion' }) {
  // Fetched once, cached, and fetched again when a token names a key it does not hold (a rotation).
  const keys = createRemoteJWKSet(new URL(jwksUrl ?? `${issuer.replace(/\/+$/, '')}/.well-known/jwks.json`));
  const name = header.toLowerCase();
  return async (headers) => {
    const token = headers[name];
    if (typeof token !== 'string') throw new Error(`no single ${name} header: the request did not come through the gateway`);
    const { payload } = await jwtVerify(token, keys, {
      issuer,
      audience,
      // Gatehouse's assertions say what they are: an access token is never taken for one.
      typ: 'gatehouse-assertion+jwt',
      algorithms: ['EdDSA', 'ES256', 'RS256'],
      // The assertion lives 60 s at most; allow a little clock skew between hosts.
      clockTolerance: 5,
      maxTokenAge: '70s',
    });
    return payload;
  };
}
