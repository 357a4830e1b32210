// The abuse guard on its own: strikes per address counted in a window, the three thresholds (suspect,
// hold, refuse), a success clearing an address, the tarpit's hold and its bound, and every memory
// bounded. Fake timers stand for the clock: the window, the refusal, the hold and the sweep are timers
// and Date.now readings.
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { AbuseGuard, type AbuseGuardLimits } from '../../src/limits/abuse-guard.js';

const LIMITS: AbuseGuardLimits = {
  suspectAfterStrikes: 2,
  holdAfterStrikes: 3,
  refuseAfterStrikes: 4,
  strikeWindowMs: 1_000,
  refuseForMs: 5_000,
  holdMs: 100,
  maxHeld: 2,
  maxAddresses: 3,
  trustForS: 60,
};

let guard: AbuseGuard;

beforeEach(() => {
  vi.useFakeTimers();
  guard = new AbuseGuard(LIMITS);
});
afterEach(() => {
  guard.close();
  vi.useRealTimers();
});

function strike(address: string, times: number): void {
  for (let i = 0; i < times; i++) guard.strike(address);
}

describe('AbuseGuard', () => {
  it('makes an address a suspect, in the last lane, at suspectAfterStrikes and not before', () => {
    strike('192.0.2.1', 1);
    expect([guard.isSuspect('192.0.2.1'), guard.laneOf('192.0.2.1')]).toEqual([false, 1]);
    strike('192.0.2.1', 1);
    expect([guard.isSuspect('192.0.2.1'), guard.laneOf('192.0.2.1')]).toEqual([true, 2]);
  });

  it('holds the refusals of an address at holdAfterStrikes and not before', () => {
    strike('192.0.2.1', 2);
    expect(guard.holdsRefusals('192.0.2.1')).toBe(false);
    strike('192.0.2.1', 1);
    expect(guard.holdsRefusals('192.0.2.1')).toBe(true);
  });

  it('refuses an address at the head from refuseAfterStrikes, with the refusal as Retry-After', () => {
    strike('192.0.2.1', 3);
    expect([guard.refuses('192.0.2.1'), guard.refusing]).toEqual([false, 0]);
    strike('192.0.2.1', 1);
    expect([guard.refuses('192.0.2.1'), guard.refusing]).toEqual([true, 1]);
    expect(guard.refuses('192.0.2.2')).toBe(false);
    expect(guard.retryAfterS).toBe(5);
  });

  it('ends a refusal after refuseForMs', () => {
    vi.advanceTimersByTime(1_000); // off the sweep's beat: the refusal is asked about before the sweep drops it
    strike('192.0.2.1', 4);
    vi.advanceTimersByTime(4_999);
    expect(guard.refuses('192.0.2.1')).toBe(true);
    vi.advanceTimersByTime(1);
    expect(guard.refuses('192.0.2.1')).toBe(false);
  });

  it('renews a refusal with each strike of a flood that goes on', () => {
    strike('192.0.2.1', 4);
    vi.advanceTimersByTime(4_000);
    strike('192.0.2.1', 4);
    vi.advanceTimersByTime(4_000);
    expect(guard.refuses('192.0.2.1')).toBe(true);
  });

  it('sweeps refusals that ran out, even of an address never heard from again', () => {
    strike('192.0.2.1', 4);
    expect(guard.refusing).toBe(1);
    vi.advanceTimersByTime(10_000);
    expect(guard.refusing).toBe(0);
  });

  it('counts strikes in a window: older strikes start the count again', () => {
    strike('192.0.2.1', 1);
    vi.advanceTimersByTime(1_000);
    strike('192.0.2.1', 1);
    expect(guard.isSuspect('192.0.2.1')).toBe(false);
    strike('192.0.2.1', 1);
    expect(guard.isSuspect('192.0.2.1')).toBe(true);
  });

  it('lets suspicion lapse when the window ends', () => {
    strike('192.0.2.1', 3);
    vi.advanceTimersByTime(1_000);
    expect([guard.isSuspect('192.0.2.1'), guard.holdsRefusals('192.0.2.1')]).toEqual([false, false]);
  });

  it('never strikes the host itself, nor a request whose socket has gone; other loopback addresses are struck', () => {
    for (const address of ['127.0.0.1', '::1', '']) {
      strike(address, 10);
      expect(guard.refuses(address)).toBe(false);
    }
    strike('127.0.0.2', 4);
    expect(guard.refuses('127.0.0.2')).toBe(true);
  });

  it('forgets the strikes of an address that succeeds, and puts it in the first lane for trustForS', () => {
    strike('192.0.2.1', 2);
    guard.cleared('192.0.2.1');
    expect([guard.isSuspect('192.0.2.1'), guard.laneOf('192.0.2.1')]).toEqual([false, 0]);
    vi.advanceTimersByTime(59_999);
    expect(guard.laneOf('192.0.2.1')).toBe(0);
    vi.advanceTimersByTime(1);
    expect(guard.laneOf('192.0.2.1')).toBe(1);
  });

  it('lets suspicion win over a past success', () => {
    guard.cleared('192.0.2.1');
    strike('192.0.2.1', 2);
    expect(guard.laneOf('192.0.2.1')).toBe(2);
  });

  it('answers a held refusal after holdMs, and says so when it holds one', () => {
    const heldFor: string[] = [];
    guard.on('held', (address) => heldFor.push(address));
    const answer = vi.fn();
    guard.hold('192.0.2.1', answer);
    expect([heldFor, guard.held, answer.mock.calls.length]).toEqual([['192.0.2.1'], 1, 0]);
    vi.advanceTimersByTime(99);
    expect(answer).not.toHaveBeenCalled();
    vi.advanceTimersByTime(1);
    expect([guard.held, answer.mock.calls.length]).toEqual([0, 1]);
  });

  it('answers at once past maxHeld refusals held', () => {
    const answers = [vi.fn(), vi.fn(), vi.fn()];
    for (const answer of answers) guard.hold('192.0.2.1', answer);
    expect(answers.map((answer) => answer.mock.calls.length)).toEqual([0, 0, 1]);
    expect(guard.held).toBe(2);
  });

  it('remembers at most maxAddresses addresses, forgetting the oldest first', () => {
    for (const address of ['192.0.2.1', '192.0.2.2', '192.0.2.3']) strike(address, 2);
    strike('192.0.2.4', 2);
    expect(['192.0.2.1', '192.0.2.2', '192.0.2.3', '192.0.2.4'].map((address) => guard.isSuspect(address))).toEqual([false, true, true, true]);
  });

  it('refuses at most maxAddresses addresses at once, forgetting the oldest refusal first', () => {
    for (const address of ['192.0.2.1', '192.0.2.2', '192.0.2.3', '192.0.2.4']) strike(address, 4);
    expect(guard.refusing).toBe(3);
    expect(guard.refuses('192.0.2.1')).toBe(false);
    expect(guard.refuses('192.0.2.4')).toBe(true);
  });
});
