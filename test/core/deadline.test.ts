import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { withinDeadline } from '../../src/core/deadline.js';

describe('withinDeadline', () => {
  beforeEach(() => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
  });

  afterEach(() => {
    vi.useRealTimers();
  });

  it('rejects an operation that has not answered when its time is up, and not before', async () => {
    let settled = false;
    const outcome = withinDeadline(new Promise<never>(() => {}), 2_500).finally(() => {
      settled = true;
    });
    outcome.catch(() => {});
    await vi.advanceTimersByTimeAsync(2_499);
    expect(settled).toBe(false);
    await vi.advanceTimersByTimeAsync(1);
    await expect(outcome).rejects.toThrow('Redis did not answer within 2500 ms');
  });

  it("passes an operation's own answer or failure on, and leaves no timer behind", async () => {
    await expect(withinDeadline(Promise.resolve('PONG'), 2_500)).resolves.toBe('PONG');
    await expect(withinDeadline(Promise.reject(new Error('NOAUTH')), 2_500)).rejects.toThrow('NOAUTH');
    expect(vi.getTimerCount()).toBe(0);
  });
});
