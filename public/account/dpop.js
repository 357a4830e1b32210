// DPoP (RFC 9449) for the account page: its tokens are bound to a key pair
// made here, whose private key WebCrypto never hands out (extractable: false).
// Every call carries a fresh proof signed with it, so a token a script
// injected into the page carried away is refused anywhere else. Without
// WebCrypto (a page served over plain HTTP to a host that is not this
// machine) the tokens stay bearer.
let dpopKey = null;
const utf8 = (text) => new TextEncoder().encode(text);
const base64url = (bytes) =>
  btoa(String.fromCharCode(...new Uint8Array(bytes)))
    .replace(/\+/g, '-')
    .replace(/\//g, '_')
    .replace(/=+$/, '');

async function dpopKeyPair() {
  if (!globalThis.crypto?.subtle) return null;
  if (!dpopKey) {
    const pair = await crypto.subtle.generateKey({ name: 'ECDSA', namedCurve: 'P-256' }, false, ['sign']);
    const { kty, crv, x, y } = await crypto.subtle.exportKey('jwk', pair.publicKey);
    dpopKey = { privateKey: pair.privateKey, jwk: { kty, crv, x, y } };
  }
  return dpopKey;
}

/** A DPoP proof for one request (`token`: the access token it goes with), or null without WebCrypto. */
async function proof(method, path, token) {
  const key = await dpopKeyPair();
  if (!key) return null;
  const url = new URL(path, location.href);
  const claims = { htm: method, htu: url.origin + url.pathname, jti: crypto.randomUUID(), iat: Math.floor(Date.now() / 1000) };
  if (token) claims.ath = base64url(await crypto.subtle.digest('SHA-256', utf8(token)));
  const signingInput = `${base64url(utf8(JSON.stringify({ typ: 'dpop+jwt', alg: 'ES256', jwk: key.jwk })))}.${base64url(utf8(JSON.stringify(claims)))}`;
  // WebCrypto's ECDSA signature is r ‖ s, as JWS wants it.
  const signature = await crypto.subtle.sign({ name: 'ECDSA', hash: 'SHA-256' }, key.privateKey, utf8(signingInput));
  return `${signingInput}.${base64url(signature)}`;
}


/** The headers that prove the key for a token request, or none. */
export async function proofHeaders(method, path, token) {
  const dpop = await proof(method, path, token);
  return dpop ? { dpop } : {};
}

