import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { API_KEY_PREFIX, apiKeySecretMatches, generateApiKey, hashApiKeySecret, parseApiKey } from '../../src/users/api-keys.js';

const KEY = /^ghk_[0-9a-f]{16}_[A-Za-z0-9_-]{43}$/;

describe('generateApiKey', () => {
  it('makes ghk_<16 hex>_<43 base64url> keys whose stored hash is the base64url SHA-256 of the secret', () => {
    const { key, keyId, hash } = generateApiKey();
    expect(key).toMatch(KEY);
    expect(key.startsWith(`${API_KEY_PREFIX}${keyId}_`)).toBe(true);
    expect(keyId).toMatch(/^[0-9a-f]{16}$/);
    const secret = key.slice(`ghk_${keyId}_`.length);
    expect(Buffer.from(secret, 'base64url')).toHaveLength(32);
    expect(hash).toBe(createHash('sha256').update(secret).digest('base64url'));
    expect(hash).not.toContain(secret);
  });

  it('never repeats a key id or a secret', () => {
    const keys = Array.from({ length: 200 }, () => generateApiKey());
    expect(new Set(keys.map((k) => k.keyId)).size).toBe(200);
    expect(new Set(keys.map((k) => k.key)).size).toBe(200);
  });
});

describe('parseApiKey', () => {
  it('splits a generated key into its id and secret', () => {
    const { key, keyId } = generateApiKey();
    const parsed = parseApiKey(key);
    expect(parsed).toEqual({ keyId, secret: key.slice(21) });
  });

  it('splits correctly when the secret itself holds _ and -', () => {
    const secret = `_-${'a'.repeat(39)}-_`;
    expect(secret).toHaveLength(43);
    expect(parseApiKey(`ghk_0123456789abcdef_${secret}`)).toEqual({ keyId: '0123456789abcdef', secret });
  });

  it('returns null for anything not shaped exactly like a key', () => {
    const { key } = generateApiKey();
    const secret = key.slice(21);
    const notKeys = [
      '',
      'correct horse battery staple',
      key.replace('ghk_', 'ghx_'),
      key.replace('ghk_', 'GHK_'),
      `ghk_0123456789ABCDEF_${secret}`,
      `ghk_0123456789abcde_${secret}`,
      `ghk_0123456789abcdef0_${secret}`,
      `ghk_0123456789abcdef-${secret}`,
      `ghk_0123456789abcdef_${secret.slice(1)}`,
      `ghk_0123456789abcdef_${secret}A`,
      `ghk_0123456789abcdef_${secret.slice(1)}=`,
      `ghk_0123456789abcdef_${secret.slice(1)}+`,
      `ghk_0123456789abcdef_${secret.slice(1)}/`,
      ` ${key}`,
      `${key}\n`,
      key.slice(0, -1),
      `${key}${key}`,
    ];
    for (const candidate of notKeys) expect(parseApiKey(candidate), candidate).toBeNull();
    expect(parseApiKey(undefined as unknown as string)).toBeNull();
  });
});

describe('apiKeySecretMatches', () => {
  it('matches the right secret only', () => {
    const { key, hash } = generateApiKey();
    const { secret } = parseApiKey(key)!;
    expect(apiKeySecretMatches(secret, hash)).toBe(true);
    expect(apiKeySecretMatches(`${secret.slice(0, -1)}${secret.endsWith('A') ? 'B' : 'A'}`, hash)).toBe(false);
    expect(apiKeySecretMatches(parseApiKey(generateApiKey().key)!.secret, hash)).toBe(false);
    expect(hashApiKeySecret(secret)).toBe(hash);
  });

  it('never matches a malformed stored hash', () => {
    const { key } = generateApiKey();
    const { secret } = parseApiKey(key)!;
    for (const stored of ['', 'abc', hashApiKeySecret(secret).slice(0, 40), Buffer.alloc(64).toString('base64url')]) {
      expect(apiKeySecretMatches(secret, stored), stored).toBe(false);
    }
  });
});
