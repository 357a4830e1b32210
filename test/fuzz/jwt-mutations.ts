// Tokens made from a valid one, each the way a parser or a verifier could get
// wrong: its header or payload changed (the signature kept), its signature's
// bytes changed, one character anywhere changed, its segments shuffled, or the
// whole re-signed with a key that is not ours; and the test of whether a token
// is still the issued one.
import fc from 'fast-check';
import { generateKeyPair, SignJWT, type JWK } from 'jose';
import { mutated } from './support.js';

export type Json = Record<string, unknown>;

const decodeJson = (segment: string): Json => JSON.parse(Buffer.from(segment, 'base64url').toString('utf8')) as Json;
const encodeJson = (value: unknown): string => Buffer.from(JSON.stringify(value), 'utf8').toString('base64url');

/**
 * Whether `candidate` is `issued` as a verifier must see it: the signed
 * segments as they are, a signature of base64url characters only whose bytes
 * are the same (its last character carries bits that decoding drops).
 */
export function isIssued(candidate: string, issued: string): boolean {
  const [h, p, s, ...rest] = candidate.split('.');
  const [ih, ip, is] = issued.split('.');
  if (rest.length > 0 || h !== ih || p !== ip || s === undefined || !/^[\w-]+$/.test(s)) return false;
  return Buffer.from(s, 'base64url').equals(Buffer.from(is!, 'base64url'));
}

const HEADER_VALUES: Record<string, readonly unknown[]> = {
  alg: ['none', 'None', 'HS256', 'RS256', 'ES256', 'EdDSA', 'Ed25519', 'PS256', '', null, ['EdDSA']],
  kid: ['', 'unknown', '../../../../dev/null', 0, null, { $ne: '' }],
  typ: ['JWT', 'at+jwt', '', null],
  crit: [['exp'], ['b64'], [], 'exp', [null]],
  b64: [false, true],
  jwk: [{ kty: 'OKP', crv: 'Ed25519', x: 'AAAA' }, {}],
  jku: ['http://127.0.0.1:1/jwks.json'],
  x5u: ['http://127.0.0.1:1/x5u'],
  x5c: [['AAAA']],
  zip: ['DEF'],
};
const PAYLOAD_VALUES: Record<string, readonly unknown[]> = {
  iss: ['http://evil.example', '', null, ['http://127.0.0.1:8080']],
  aud: ['someone-else', '', ['gatehouse'], ['gatehouse', 'x'], null],
  sub: ['', 'admin', 0, null, { admin: true }],
  exp: [0, -1, 1e300, 2 ** 53, '9999999999', 1.5, null, Number.MAX_SAFE_INTEGER],
  nbf: [2 ** 40, 0, 'now', null],
  iat: [-1, 2 ** 40, 'x', null],
  jti: ['', 0, null],
  typ: ['Refresh', 'Bearer', 'bearer', 'ID', '', null],
  sid: ['', 'another-session', 0, null],
  preferred_username: ['admin', '', null],
  amr: [[], ['pwd', 'mfa'], ['api_key'], 'pwd', [null], null],
};

/** One claim or header parameter set to a value (a listed suspect, or any JSON), or removed. */
function edits(values: Record<string, readonly unknown[]>): fc.Arbitrary<Array<[string, unknown]>> {
  const edit = fc.oneof(
    {
      weight: 4,
      arbitrary: fc
        .constantFrom(...Object.keys(values))
        .chain((name) => fc.tuple(fc.constant(name), fc.oneof(fc.constantFrom(...values[name]!, undefined), fc.jsonValue({ maxDepth: 1 })))),
    },
    { weight: 1, arbitrary: fc.tuple(fc.string({ maxLength: 8 }), fc.jsonValue({ maxDepth: 1 })) },
  );
  return fc.array(edit, { minLength: 1, maxLength: 3 });
}

function applied(base: Json, changes: Array<[string, unknown]>): Json {
  const result: Json = { ...base };
  for (const [name, value] of changes) {
    if (value === undefined) delete result[name];
    else result[name] = value;
  }
  return result;
}

const B64URL = fc.constantFrom(...'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_');

/** Tokens made from `issued`: each kind of mutation a parser or a verifier could get wrong. */
export function tokensFrom(issued: string, foreignSign: (header: Json, payload: Json) => Promise<string>): fc.Arbitrary<string | (() => Promise<string>)> {
  const [h, p, s] = issued.split('.') as [string, string, string];
  const header = decodeJson(h);
  const payload = decodeJson(p);
  const signature = Buffer.from(s, 'base64url');
  return fc.oneof(
    fc.constant(issued),
    // The signed parts changed, the signature kept.
    edits(HEADER_VALUES).map((changes) => `${encodeJson(applied(header, changes))}.${p}.${s}`),
    edits(PAYLOAD_VALUES).map((changes) => `${h}.${encodeJson(applied(payload, changes))}.${s}`),
    // The same claims, encoded another way (key order, padding, whitespace): what is signed is the text.
    fc
      .constantFrom(`${encodeJson(header)} `.trim(), `${h}=`, Buffer.from(` ${JSON.stringify(header)}`).toString('base64url'))
      .map((other) => `${other}.${p}.${s}`),
    // The signature's bytes changed.
    fc.tuple(fc.nat({ max: signature.length - 1 }), fc.integer({ min: 1, max: 255 })).map(([at, xor]) => {
      const bytes = Buffer.from(signature);
      bytes[at]! ^= xor;
      return `${h}.${p}.${bytes.toString('base64url')}`;
    }),
    fc.uint8Array({ maxLength: 96 }).map((bytes) => `${h}.${p}.${Buffer.from(bytes).toString('base64url')}`),
    // One character anywhere: replaced, inserted, removed, or the token cut short.
    mutated(issued, fc.oneof(B64URL, fc.constantFrom('.', '=', '+', '/', '%', ' ', '\t'))),
    // Segments dropped, repeated or swapped.
    fc.constantFrom(`${h}.${p}`, `${h}.${p}.`, `${h}.${p}.${s}.${s}`, `${p}.${h}.${s}`, `${h}.${h}.${s}`, `.${p}.${s}`, `${h}..${s}`, '..', '.'),
    // Signed, but by a key that is not ours (with our kid), over changed or unchanged claims.
    fc.tuple(edits(HEADER_VALUES), edits(PAYLOAD_VALUES), fc.boolean()).map(
      ([hc, pc, keep]) =>
        () =>
          foreignSign(applied(header, keep ? [] : hc), applied(payload, pc)),
    ),
    // Anything shaped like a compact JWS.
    fc.array(fc.string({ unit: B64URL, maxLength: 40 }), { minLength: 1, maxLength: 4 }).map((parts) => parts.join('.')),
  );
}

/** An attacker's own EdDSA key, and the HS256 key-confusion trick with our public key as the secret. */
export async function foreignSigner(publicJwk: JWK): Promise<(header: Json, payload: Json) => Promise<string>> {
  const { privateKey } = await generateKeyPair('EdDSA', { crv: 'Ed25519' });
  const hmacSecret = new TextEncoder().encode(JSON.stringify(publicJwk));
  let flip = false;
  return async (header, payload) => {
    flip = !flip;
    const alg = flip ? 'EdDSA' : 'HS256';
    try {
      return await new SignJWT(payload).setProtectedHeader({ ...header, alg }).sign(flip ? privateKey : hmacSecret);
    } catch {
      // jose refuses to sign some headers (a `crit` it does not know, b64): send them unsigned instead.
      return `${encodeJson({ ...header, alg })}.${encodeJson(payload)}.${'A'.repeat(86)}`;
    }
  };
}

/** `payload` with a claim or two changed or removed: for tokens signed with the issuer's own key. */
export function claimEdits(payload: Json): fc.Arbitrary<Json> {
  // Mostly one claim changed to one of its suspects: each check is then the only one that can refuse.
  const one = fc
    .constantFrom(...Object.keys(PAYLOAD_VALUES))
    .chain((name) => fc.constantFrom(...PAYLOAD_VALUES[name]!, undefined).map((value): Array<[string, unknown]> => [[name, value]]));
  return fc.oneof({ weight: 3, arbitrary: one }, { weight: 1, arbitrary: edits(PAYLOAD_VALUES) }).map((changes) => applied(payload, changes));
}

/** The claims of a token as the gateway issued it. */
export const claimsOf = (token: string): Json => decodeJson(token.split('.')[1]!);

const isNonEmptyString = (value: unknown) => typeof value === 'string' && value !== '';
const isNumericDate = (value: unknown) => Number.isSafeInteger(value) && (value as number) >= 0;

/**
 * Whether a bearer token signed with the issuer's own key must be accepted,
 * as the README states the checks: `iss` and `aud` exactly the issuer's,
 * `exp` not past and `nbf` (when present) not ahead (with the clock
 * tolerance), `typ` an access or refresh token, the session of `sid` alive
 * and `sub`'s, and every claim the issuer writes present with its type.
 */
export function claimsAccepted(claims: Json, issued: Json, nowS: number, toleranceS: number): boolean {
  const { iss, aud, exp, nbf, iat, jti, typ, sid, sub, preferred_username, amr } = claims;
  return (
    iss === issued.iss &&
    aud === issued.aud &&
    isNumericDate(exp) &&
    (exp as number) > nowS - toleranceS &&
    (nbf === undefined || (typeof nbf === 'number' && nbf <= nowS + toleranceS)) &&
    isNumericDate(iat) &&
    isNonEmptyString(jti) &&
    (typ === 'Bearer' || typ === 'Refresh') &&
    sid === issued.sid &&
    sub === issued.sub &&
    isNonEmptyString(preferred_username) &&
    Array.isArray(amr) &&
    amr.length > 0 &&
    amr.every((method) => method === 'pwd' || method === 'api_key')
  );
}
