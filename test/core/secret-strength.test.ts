// The judgement of a secret an operator configures: placeholders, repeats and
// guessable ones refused with a reason that never quotes the secret; what a
// random generator makes accepted.
import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { estimatedBits, judgeSecret, MIN_SECRET_BITS } from '../../src/core/secret-strength.js';

// One `openssl rand -base64 32`, one `openssl rand -hex 16`, kept as they came out.
const OPENSSL_BASE64 = 'wACzjoi1r0f6e41RrZWuIZji4F6XSriqA5xbfQtIugU=';
const OPENSSL_HEX = 'd1fefa86f323b094b1a0d2544f3c3ff5';

function weakness(secret: string): string | undefined {
  const verdict = judgeSecret(secret);
  return verdict.strong ? undefined : verdict.weakness;
}

describe('judgeSecret', () => {
  it('refuses the placeholder the Kubernetes example shipped, although it passes the 32-character rule', () => {
    const placeholder = 'replace-me-with-at-least-32-random-characters';
    expect(placeholder.length).toBeGreaterThanOrEqual(32);
    expect(weakness(placeholder)).toBe('is a placeholder ("replace"), not a secret');
  });

  it.each([
    ['changeme-changeme-changeme-changeme', 'changeme'],
    ['changeme0123456789abcdefghijklmnopq', 'changeme'],
    ['CHANGEME_PLEASE_Q8r2Lx7Vt1Mz4Kp9Wn3B', 'changeme'],
    ['Your-Service-Token-Goes-Here-4f9a2c7e1b', 'your'],
    ['example-token-6Gq1Vz8Lr3Xw0Kp5Nt2Bm7Cj', 'example'],
    ['s3cr3t-but-not-really-a-secret-at-all', 'secret'],
    ['password1234password5678password90ab', 'password'],
    ['placeholder:token:for:the:internal:api', 'placeholder'],
    ['xxxx-xxxx-xxxx-xxxx-xxxx-xxxx-xxxx-xxxx', 'xxx'],
  ])('refuses %s as a placeholder (%s)', (secret, word) => {
    expect(weakness(secret)).toBe(`is a placeholder (${JSON.stringify(word)}), not a secret`);
  });

  it('refuses one character repeated, and a short pattern repeated', () => {
    expect(weakness('a'.repeat(40))).toBe('is one character repeated');
    expect(weakness('a1b2'.repeat(10))).toBe('repeats a pattern of 4 characters');
    expect(weakness('0123456789'.repeat(4))).toBe('repeats a pattern of 10 characters');
  });

  it('refuses what scores under 128 bits: digits only, runs of neighbouring characters', () => {
    expect(weakness('31415926535897932384626433832795')).toMatch(/^is too easy to guess \(about 106 bits estimated, 128 needed\)$/);
    expect(weakness('abcdefghijklmnopqrstuvwxyz012345')).toMatch(/^is too easy to guess \(about \d+ bits estimated, 128 needed\)$/);
  });

  it('never quotes the secret in its reason, only the placeholder word', () => {
    for (const secret of ['a'.repeat(40), 'a1b2'.repeat(10), '31415926535897932384626433832795', 'changeme0123456789abcdefghijklmnopq']) {
      expect(weakness(secret)).not.toContain(secret.slice(0, 10));
    }
  });

  it('accepts what openssl rand makes', () => {
    expect(judgeSecret(OPENSSL_BASE64)).toEqual({ strong: true, bits: expect.any(Number) });
    expect(judgeSecret(OPENSSL_HEX).strong).toBe(true);
    // Hex has no word a person would leave, and 32 random digits score about 134 bits or more.
    for (let i = 0; i < 200; i++) expect(judgeSecret(randomBytes(16).toString('hex')).strong).toBe(true);
  });
});

describe('estimatedBits', () => {
  it('is length × log2 of the alphabet of the character classes used', () => {
    expect(estimatedBits('q8Zr')).toBeCloseTo(4 * Math.log2(62));
    expect(estimatedBits('q8-r')).toBeCloseTo(4 * Math.log2(26 + 10 + 33));
    expect(estimatedBits(OPENSSL_BASE64)).toBeGreaterThan(2 * MIN_SECRET_BITS);
  });

  it('counts nothing for a character that continues a run of equal or neighbouring ones', () => {
    expect(estimatedBits('aaaaaaaa')).toBeCloseTo(2 * Math.log2(26));
    expect(estimatedBits('abcdefgh')).toBeCloseTo(2 * Math.log2(26));
    expect(estimatedBits('87654321')).toBeCloseTo(2 * Math.log2(10));
  });
});
