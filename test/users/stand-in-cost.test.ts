// The stand-in check of an unknown username costs what the users' own checks cost. With users hashed at another cost
// than the default (an older deployment's, or a cheaper one chosen on purpose), a stand-in at the default cost made
// every unknown name's check dearer or cheaper than a known one's, and so told the two apart.
import { describe, expect, it } from 'vitest';
import { EqualTimePasswordCheck } from '../../src/users/equal-time-password-check.js';
import { DEFAULT_SCRYPT_PARAMS, hashPassword } from '../../src/users/passwords.js';

const cost = ({ logN, r, p }: { logN: number; r: number; p: number }) => `scrypt$ln=${logN},r=${r},p=${p}`;

describe("the stand-in hash's cost", () => {
  it("attack: users hashed at ln=10 get a stand-in at ln=10, not the default's ln=15, so an unknown name's check costs a known one's", async () => {
    const users = await Promise.all(['alice', 'bob'].map((name) => hashPassword(`${name}-password-1`, { logN: 10, r: 8, p: 1 })));
    const check = await EqualTimePasswordCheck.create({}, users);
    expect(check.standInCost).toBe('scrypt$ln=10,r=8,p=1');
  });

  it('takes the cost most users have when their hashes differ', async () => {
    const users = [
      await hashPassword('a', { logN: 11, r: 8, p: 1 }),
      await hashPassword('b', { logN: 10, r: 8, p: 1 }),
      await hashPassword('c', { logN: 11, r: 8, p: 1 }),
    ];
    expect((await EqualTimePasswordCheck.create({}, users)).standInCost).toBe('scrypt$ln=11,r=8,p=1');
  });

  it('keeps the default cost with no users, or none with a readable hash', async () => {
    expect((await EqualTimePasswordCheck.create({})).standInCost).toBe(cost(DEFAULT_SCRYPT_PARAMS));
    expect((await EqualTimePasswordCheck.create({}, ['not a hash', 'scrypt$ln=99,r=8,p=1$AAAA$BBBB'])).standInCost).toBe(cost(DEFAULT_SCRYPT_PARAMS));
  });
});
