// The body guard on its own: a request body piped through it (a PassThrough stands for the client's
// IncomingMessage: the guard pipes, unpipes and waits for its end), against its size, its deadline
// and its minimum rate over a window. Fake timers stand for the clock (performance.now too, which
// the deadline is counted from); streams still move on real ticks.
import type { IncomingMessage } from 'node:http';
import { PassThrough, type Transform } from 'node:stream';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import type { GatehouseError } from '../../src/core/errors.js';
import { guardBody, type BodyGuardLimits } from '../../src/limits/body-guard.js';

const LIMITS: BodyGuardLimits = { limitBytes: 10, deadlineMs: 1_000, minBytesPerS: 0, windowMs: 100 };

interface Guarded {
  client: PassThrough;
  guard: Transform;
  violations: GatehouseError[];
  /** What went through the guard, as text. */
  passed: () => string;
}

function guarded(limits: Partial<BodyGuardLimits> = {}, startedAt = performance.now(), read = true): Guarded {
  const client = new PassThrough();
  const violations: GatehouseError[] = [];
  const guard = guardBody(client as unknown as IncomingMessage, { ...LIMITS, ...limits }, startedAt, (error) => violations.push(error));
  const chunks: Buffer[] = [];
  if (read) guard.on('data', (chunk: Buffer) => chunks.push(chunk));
  guard.on('error', () => {});
  return { client, guard, violations, passed: () => Buffer.concat(chunks).toString() };
}

/** Lets piped chunks through (streams move on ticks and immediates, which stay real). */
const flowed = () => new Promise((resolve) => setImmediate(resolve));

beforeEach(() => {
  vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'setInterval', 'clearInterval', 'performance'] });
});
afterEach(() => {
  vi.useRealTimers();
});

describe('guardBody', () => {
  it('passes a body within its limits through unchanged', async () => {
    const body = guarded();
    body.client.end('0123456789');
    await flowed();
    expect(body.passed()).toBe('0123456789');
    expect(body.violations).toEqual([]);
  });

  it('refuses a body over limitBytes with 413 and stops reading the client', async () => {
    const body = guarded();
    body.client.write('0123456789');
    await flowed();
    body.client.write('!');
    await flowed();
    expect(body.violations.map((error) => [error.code, error.status])).toEqual([['payload_too_large', 413]]);
    expect(body.guard.destroyed).toBe(true);
    expect(body.client.listenerCount('data')).toBe(0);
    expect(body.passed()).toBe('0123456789');
  });

  it('sets no size limit when limitBytes is absent', async () => {
    const body = guarded({ limitBytes: undefined });
    body.client.end('x'.repeat(1_000));
    await flowed();
    expect(body.passed()).toHaveLength(1_000);
    expect(body.violations).toEqual([]);
  });

  it('refuses a body that has not arrived whole by the deadline with 408', async () => {
    const body = guarded();
    body.client.write('01');
    await flowed();
    vi.advanceTimersByTime(999);
    expect(body.violations).toEqual([]);
    vi.advanceTimersByTime(1);
    expect(body.violations.map((error) => [error.code, error.status, error.reason])).toEqual([
      ['request_timeout', 408, 'the request body did not arrive in time'],
    ]);
    expect(body.guard.destroyed).toBe(true);
  });

  it('counts the deadline from when the request began, not from when the guard was made', () => {
    const body = guarded({}, performance.now() - 400);
    vi.advanceTimersByTime(599);
    expect(body.violations).toEqual([]);
    vi.advanceTimersByTime(1);
    expect(body.violations.map((error) => error.code)).toEqual(['request_timeout']);
  });

  it('stops its timers once the body has arrived whole', async () => {
    const body = guarded({ minBytesPerS: 1_000 });
    body.client.end('0123');
    await flowed();
    vi.advanceTimersByTime(5_000);
    expect(body.violations).toEqual([]);
  });

  it('stops its timers once the body has arrived whole, even while the upstream is still taking it', async () => {
    const body = guarded({ limitBytes: undefined, minBytesPerS: 1_000 }, performance.now(), false);
    // Half a buffer, then the half that fills the guard's buffer (the upstream reads none), then the last byte.
    const half = body.guard.readableHighWaterMark / 2;
    body.client.write('x'.repeat(half));
    body.client.write('x'.repeat(half));
    body.client.end('y');
    await flowed();
    vi.advanceTimersByTime(5_000);
    expect(body.violations).toEqual([]);
  });

  it('refuses a body that arrives below minBytesPerS over a window with 408', async () => {
    // 1000 B/s over 100 ms windows: at least 100 bytes a window.
    const body = guarded({ limitBytes: undefined, minBytesPerS: 1_000, deadlineMs: 60_000 });
    body.client.write('x'.repeat(100));
    await flowed();
    vi.advanceTimersByTime(100);
    expect(body.violations).toEqual([]);
    body.client.write('x'.repeat(99));
    await flowed();
    vi.advanceTimersByTime(100);
    expect(body.violations.map((error) => [error.code, error.reason])).toEqual([['request_timeout', 'the request body arrives too slowly']]);
  });

  it('does not hold a window against the client while the upstream is not reading', async () => {
    const body = guarded({ limitBytes: undefined, minBytesPerS: 1_000, deadlineMs: 60_000 }, performance.now(), false);
    body.client.write('x'.repeat(body.guard.readableHighWaterMark));
    await flowed();
    vi.advanceTimersByTime(500);
    expect(body.violations).toEqual([]);
  });

  it('checks no rate when minBytesPerS is 0', async () => {
    const body = guarded({ deadlineMs: 60_000 });
    body.client.write('0');
    await flowed();
    vi.advanceTimersByTime(10_000);
    expect(body.violations).toEqual([]);
  });
});
