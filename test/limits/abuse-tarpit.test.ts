// The one tarpit (AbuseGuard.answerRefusal) that the front door and admission
// share: a refusal is counted as a strike when it is the address's doing, and
// its answer is held `holdMs` always (the front door) or once the address has
// earned it with `holdAfterStrikes` strikes (admission's refused tokens).
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { AbuseLimitsSchema } from '../../src/config/flood-schema.js';
import { AbuseGuard } from '../../src/limits/abuse-guard.js';

const HOLD_MS = 1_000;
const ADDRESS = '192.0.2.7';
let guard: AbuseGuard;

beforeEach(() => {
  vi.useFakeTimers();
  guard = new AbuseGuard(AbuseLimitsSchema.parse({ holdAfterStrikes: 2, refuseAfterStrikes: 5, holdMs: HOLD_MS }), () => Date.now());
});

afterEach(() => {
  guard.close();
  vi.useRealTimers();
});

describe('answerRefusal', () => {
  it('earned: answered at once until the address has holdAfterStrikes strikes, then held holdMs', () => {
    const answered: number[] = [];
    guard.answerRefusal(ADDRESS, () => answered.push(1), { strike: true, hold: 'earned' });
    expect(answered).toEqual([1]);
    guard.answerRefusal(ADDRESS, () => answered.push(2), { strike: true, hold: 'earned' });
    expect(answered).toEqual([1]);
    expect(guard.held).toBe(1);
    vi.advanceTimersByTime(HOLD_MS);
    expect(answered).toEqual([1, 2]);
    expect(guard.held).toBe(0);
  });

  it('always: held even for an address with no strikes; without strike the address stays clean', () => {
    let answered = false;
    guard.answerRefusal(ADDRESS, () => (answered = true), { strike: false, hold: 'always' });
    expect(answered).toBe(false);
    vi.advanceTimersByTime(HOLD_MS);
    expect(answered).toBe(true);
    expect(guard.holdsRefusals(ADDRESS)).toBe(false);
    expect(guard.isSuspect(ADDRESS)).toBe(false);
  });

  it('each struck refusal counts: refuseAfterStrikes of them refuse the address at the head', () => {
    for (let i = 0; i < 5; i++) guard.answerRefusal(ADDRESS, () => undefined, { strike: true, hold: 'always' });
    expect(guard.refuses(ADDRESS)).toBe(true);
  });
});
