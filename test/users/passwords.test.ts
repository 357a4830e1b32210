import { describe, expect, it } from 'vitest';
import { isWellFormedPasswordHash } from '../../src/core/password-hash-format.js';
import { DEFAULT_SCRYPT_PARAMS, hashPassword, verifyPassword } from '../../src/users/passwords.js';
import { TEST_SCRYPT_PARAMS } from '../helpers/gateway.js';

/** Cheap scrypt parameters: these tests are about behaviour, not hashing cost. */
const FAST = TEST_SCRYPT_PARAMS;
const ENCODING = /^scrypt\$ln=(\d+),r=(\d+),p=(\d+)\$([A-Za-z0-9_-]{22})\$([A-Za-z0-9_-]{43})$/;

describe('hashPassword', () => {
  it('encodes its parameters, a 16-byte salt and a 32-byte key', async () => {
    const encoded = await hashPassword('correct horse', FAST);
    const match = ENCODING.exec(encoded);
    expect(match).not.toBeNull();
    expect(match!.slice(1, 4)).toEqual(['10', '8', '1']);
    expect(Buffer.from(match![4]!, 'base64url')).toHaveLength(16);
    expect(Buffer.from(match![5]!, 'base64url')).toHaveLength(32);
    expect(encoded).not.toContain('correct horse');
  });

  it('uses N = 2^15, r = 8, p = 1 by default, and can verify that cost (maxmem set from the parameters)', async () => {
    expect(DEFAULT_SCRYPT_PARAMS).toEqual({ logN: 15, r: 8, p: 1 });
    const encoded = await hashPassword('default cost');
    expect(encoded.startsWith('scrypt$ln=15,r=8,p=1$')).toBe(true);
    await expect(verifyPassword('default cost', encoded)).resolves.toBe(true);
    await expect(verifyPassword('default cosT', encoded)).resolves.toBe(false);
  });

  it('salts every hash afresh', async () => {
    const [a, b] = await Promise.all([hashPassword('same', FAST), hashPassword('same', FAST)]);
    expect(a).not.toBe(b);
    await expect(verifyPassword('same', a)).resolves.toBe(true);
    await expect(verifyPassword('same', b)).resolves.toBe(true);
  });

  it('does not block the event loop while hashing', async () => {
    let turns = 0;
    let done = false;
    const spin = (): void => {
      if (done) return;
      turns += 1;
      setImmediate(spin);
    };
    setImmediate(spin);
    await hashPassword('busy', DEFAULT_SCRYPT_PARAMS);
    done = true;
    expect(turns).toBeGreaterThan(1);
  });

  it('refuses parameters it could not verify later', async () => {
    await expect(hashPassword('x', { logN: 0, r: 8, p: 1 })).rejects.toThrow(RangeError);
    await expect(hashPassword('x', { logN: 24, r: 8, p: 1 })).rejects.toThrow(RangeError);
    await expect(hashPassword('x', { logN: 10, r: 1.5, p: 1 })).rejects.toThrow(RangeError);
  });
});

describe('verifyPassword', () => {
  it('accepts only the exact password', async () => {
    const encoded = await hashPassword('s3cret-Passw0rd', FAST);
    await expect(verifyPassword('s3cret-Passw0rd', encoded)).resolves.toBe(true);
    await expect(verifyPassword('s3cret-passw0rd', encoded)).resolves.toBe(false);
    await expect(verifyPassword('s3cret-Passw0rd ', encoded)).resolves.toBe(false);
    await expect(verifyPassword('', encoded)).resolves.toBe(false);
  });

  it('compares UTF-8 strings as given, without Unicode normalisation', async () => {
    const composed = 'pass\u00e9word\u{1F511}';
    const decomposed = 'passe\u0301word\u{1F511}';
    const encoded = await hashPassword(composed, FAST);
    await expect(verifyPassword(composed, encoded)).resolves.toBe(true);
    await expect(verifyPassword(decomposed, encoded)).resolves.toBe(false);
  });

  it('reads the parameters from the encoding', async () => {
    const encoded = await hashPassword('pw', { logN: 11, r: 4, p: 2 });
    expect(encoded.startsWith('scrypt$ln=11,r=4,p=2$')).toBe(true);
    await expect(verifyPassword('pw', encoded)).resolves.toBe(true);
    // The same salt and key under other parameters is another hash.
    await expect(verifyPassword('pw', encoded.replace('ln=11', 'ln=12'))).resolves.toBe(false);
  });

  it('treats a malformed or hostile encoding as a mismatch and never throws', async () => {
    const good = await hashPassword('pw', FAST);
    const [, , salt, key] = good.split('$');
    const malformed = [
      '',
      'pw',
      'scrypt',
      `bcrypt$ln=10,r=8,p=1$${salt}$${key}`,
      `scrypt$ln=10,r=8$${salt}$${key}`,
      `scrypt$ln=10,r=8,p=1$${salt}`,
      `scrypt$ln=10,r=8,p=1$${salt}$${key}$extra`,
      `scrypt$ln=10,r=8,p=1$${salt}$${key}=`,
      `scrypt$ln=10,r=8,p=1$${salt}$${key!.slice(0, -1)}+`,
      `scrypt$ln=10,r=8,p=1$${salt!.slice(0, 8)}$${key}`,
      `scrypt$ln=10,r=8,p=1$${salt}$${key!.slice(0, 10)}`,
      `scrypt$ln=0,r=8,p=1$${salt}$${key}`,
      `scrypt$ln=10,r=0,p=1$${salt}$${key}`,
      `scrypt$ln=10,r=8,p=0$${salt}$${key}`,
      // Would need gigabytes: refused before scrypt is called.
      `scrypt$ln=31,r=8,p=1$${salt}$${key}`,
      `scrypt$ln=20,r=32,p=1$${salt}$${key}`,
      ` ${good}`,
      `${good}\n`,
    ];
    for (const encoded of malformed) {
      await expect(verifyPassword('pw', encoded), encoded).resolves.toBe(false);
      expect(isWellFormedPasswordHash(encoded), encoded).toBe(false);
    }
    await expect(verifyPassword('pw', undefined as unknown as string)).resolves.toBe(false);
    expect(isWellFormedPasswordHash(good)).toBe(true);
  });

  it('rejects a tampered key', async () => {
    const encoded = await hashPassword('pw', FAST);
    const last = encoded.slice(-2, -1);
    const tampered = `${encoded.slice(0, -2)}${last === 'A' ? 'B' : 'A'}${encoded.slice(-1)}`;
    expect(isWellFormedPasswordHash(tampered)).toBe(true);
    await expect(verifyPassword('pw', tampered)).resolves.toBe(false);
  });
});
