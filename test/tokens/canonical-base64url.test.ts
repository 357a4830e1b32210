// Attack 11b: base64url decoders ignore the unused low bits of a segment's
// last character, so one EdDSA signature (86 characters, 4 unused bits) has
// 16 spellings that all verified, each cached as a token of its own. Only the
// spelling the issuer wrote may verify, and nothing else reaches the cache.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { login, startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { startUpstream, type Upstream } from '../helpers/upstream.js';

const ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';

let backend: Upstream;
let gw: TestGateway;

beforeAll(async () => {
  backend = await startUpstream();
  gw = await startTestGateway({ config: { routes: [{ prefix: '/api', upstreams: [backend.url] }] } });
});
afterAll(async () => {
  await gw.close();
  await backend.close();
});

/** Every spelling of a segment that a lenient decoder reads as the same bytes: its last character with each value of the unused bits. */
function spellings(segment: string): string[] {
  const unusedBits = { 2: 4, 3: 2 }[segment.length % 4] ?? 0;
  const last = ALPHABET.indexOf(segment.at(-1)!);
  const base = last & ~((1 << unusedBits) - 1);
  return Array.from({ length: 1 << unusedBits }, (_, bits) => segment.slice(0, -1) + ALPHABET[base | bits]);
}

async function bearerStatus(token: string): Promise<{ status: number; detail: string | undefined }> {
  const response = await fetch(`${gw.url}/api/x`, { headers: { authorization: `Bearer ${token}` } });
  const body = response.status === 200 ? undefined : ((await response.json()) as { $diagnoses: Array<{ $detail: string }> });
  return { status: response.status, detail: body?.$diagnoses[0]!.$detail };
}

const NOT_CANONICAL = '401 (Unauthorized) - invalid_token: token is not in canonical base64url';

describe('attack 11b: non-canonical base64url in a token', () => {
  it("of 16 spellings of one valid token's signature only the canonical one verifies, and the bearer cache holds one entry", async () => {
    const { access_token: token } = await login(gw.url, 'alice', 'alice-password-1');
    const [header, payload, signature] = token.split('.') as [string, string, string];
    const variants = spellings(signature);
    expect(variants).toHaveLength(16);
    expect(variants).toContain(signature);
    const cachedBefore = gw.gateway.bearer.size;
    const seenBefore = backend.seen.length;

    for (const variant of variants) {
      const answer = await bearerStatus(`${header}.${payload}.${variant}`);
      if (variant === signature) expect(answer).toEqual({ status: 200, detail: undefined });
      else expect(answer, variant).toEqual({ status: 401, detail: NOT_CANONICAL });
    }
    expect(gw.gateway.bearer.size - cachedBefore).toBe(1);
    expect(backend.seen.length - seenBefore).toBe(1);
  });

  it('the header and payload segments are held to their canonical spelling too', async () => {
    const { access_token: token } = await login(gw.url, 'alice', 'alice-password-1');
    const segments = token.split('.');
    for (const index of [0, 1]) {
      // A segment whose length is a multiple of 4 has no unused bits and one spelling only.
      for (const variant of spellings(segments[index]!).filter((spelling) => spelling !== segments[index])) {
        const forged = segments.map((segment, i) => (i === index ? variant : segment)).join('.');
        // Refused before the signature is checked (which would refuse it too: the signing input changed).
        expect(await bearerStatus(forged), forged).toEqual({ status: 401, detail: NOT_CANONICAL });
      }
    }
  });

  it.each([
    ['= padding on the signature', (s: string) => `${s}==`, 'malformed token'],
    ['standard base64 (+ and /) for the same bytes', (s: string) => Buffer.from(s, 'base64url').toString('base64').replace(/=+$/, ''), 'malformed token'],
    ['a length no byte string encodes to', (s: string) => `${s}AAA`, 'token is not in canonical base64url'],
  ])('%s: 401', async (_case, spell, reason) => {
    // A signature with a - or _ in it, so that its standard base64 spelling differs.
    let token = '';
    while (!/[-_]/.test(token.split('.')[2] ?? '')) ({ access_token: token } = await login(gw.url, 'alice', 'alice-password-1'));
    const [header, payload, signature] = token.split('.') as [string, string, string];
    const spelt = spell(signature);
    expect(spelt).not.toBe(signature);
    expect(await bearerStatus(`${header}.${payload}.${spelt}`)).toEqual({ status: 401, detail: `401 (Unauthorized) - invalid_token: ${reason}` });
  });
});
