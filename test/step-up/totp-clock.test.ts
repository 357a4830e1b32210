// TOTP against a fixed clock: which codes a moment accepts (its step and one
// either side), and that a code taken once is refused however often it is
// sent again while it could still be valid (RFC 6238 5.2).
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { SecondFactors } from '../../src/factors/second-factors.js';
import { matchingStep, newTotpSecret, totpCodeAt, TOTP_PERIOD_S } from '../../src/factors/totp-codes.js';
import { LocalIdentityProvider } from '../../src/users/local-provider.js';
import { MemoryStore } from '../../src/store/memory-store.js';
import { writeTestUsers } from '../helpers/gateway.js';

const T = Date.parse('2030-05-01T12:00:10Z');
const STEP_MS = TOTP_PERIOD_S * 1000;
const STEP = Math.floor(T / STEP_MS);

describe('the window of a fixed moment', () => {
  const secret = newTotpSecret();

  it("accepts the moment's code and those of the steps either side, naming the step each matched", () => {
    expect(matchingStep(secret, totpCodeAt(secret, T), T)).toBe(STEP);
    expect(matchingStep(secret, totpCodeAt(secret, T - STEP_MS), T)).toBe(STEP - 1);
    expect(matchingStep(secret, totpCodeAt(secret, T + STEP_MS), T)).toBe(STEP + 1);
  });

  it('refuses codes two steps away, of another secret, and anything not six digits', () => {
    expect(matchingStep(secret, totpCodeAt(secret, T - 2 * STEP_MS), T)).toBeNull();
    expect(matchingStep(secret, totpCodeAt(secret, T + 2 * STEP_MS), T)).toBeNull();
    expect(matchingStep(secret, totpCodeAt(newTotpSecret(), T), T)).toBeNull();
    for (const code of ['', '12345', '1234567', 'abcdef', ` ${totpCodeAt(secret, T)}`]) expect(matchingStep(secret, code, T)).toBeNull();
  });
});

describe('a code used twice', () => {
  let folder: string;
  let users: LocalIdentityProvider;
  let now = T;
  let factors: SecondFactors;
  let sub: string;

  beforeEach(async () => {
    folder = await mkdtemp(join(tmpdir(), 'gatehouse-totp-'));
    const usersFile = join(folder, 'users.yaml');
    await writeTestUsers(usersFile, [{ name: 'alice', password: 'alice-password-1' }]);
    users = await LocalIdentityProvider.open({ provider: 'local', usersFile, watch: false }, pino({ level: 'silent' }));
    now = T;
    factors = new SecondFactors({ users, store: new MemoryStore(), now: () => now });
    sub = (await users.authenticate('alice', 'alice-password-1'))!.sub;
  });
  afterEach(async () => {
    await users.close();
    await rm(folder, { recursive: true, force: true });
  });

  it('is refused, including the enrolment code at the login that follows, and the next step is taken', async () => {
    const { secret } = await factors.startTotp(sub);
    const enrolmentCode = totpCodeAt(secret, now);
    expect(await factors.confirmTotp(sub, enrolmentCode)).toHaveLength(10);
    expect(await factors.check(sub, enrolmentCode)).toBeNull();
    now += STEP_MS;
    const code = totpCodeAt(secret, now);
    expect(await factors.check(sub, code)).toBe('otp');
    expect(await factors.check(sub, code)).toBeNull();
    // Still refused while the code could be valid: the window reaches one step back.
    now += STEP_MS;
    expect(await factors.check(sub, code)).toBeNull();
  });

  it('proves nothing before enrolment is confirmed', async () => {
    const { secret } = await factors.startTotp(sub);
    expect(factors.enrolled(sub)).toBe(false);
    expect(await factors.check(sub, totpCodeAt(secret, now))).toBeNull();
  });
});
