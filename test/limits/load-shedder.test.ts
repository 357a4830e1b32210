// The load shedder's levels (limits/load-shedder.ts): read from the event loop
// every interval, up at once, down only after the cool-down; and the real
// gauge reads a blocked loop as late, its timer resting while the loop mostly waits.
import { afterEach, describe, expect, it, vi } from 'vitest';
import { parseConfig } from '../../src/config-load/load.js';
import { LoadShedder, NodeLoopGauge, type LoadSheddingSettings, type LoopGauge, type LoopReading } from '../../src/limits/load-shedder.js';
import { nextEvent } from '../helpers/events.js';

const SETTINGS: LoadSheddingSettings = {
  enabled: true,
  sampleIntervalMs: 500,
  shedUnauthenticatedAtDelayMs: 50,
  shedAllAtDelayMs: 1000,
  coolDownMs: 2000,
  minUtilization: 0.8,
  retryAfterS: 1,
};

/** A loop whose next readings the test sets. */
class FakeGauge implements LoopGauge {
  next: LoopReading = { delayMs: 0, utilization: 0 };
  reads = 0;
  read(): LoopReading {
    this.reads += 1;
    return this.next;
  }
  close(): void {}
}

afterEach(() => {
  vi.useRealTimers();
});

describe('load shedder', () => {
  it('sheds nothing while the loop is late but this process mostly waits (the machine is busy with others)', () => {
    vi.useFakeTimers();
    const gauge = new FakeGauge();
    const shedder = new LoadShedder(SETTINGS, gauge);
    vi.advanceTimersByTime(500); // the start's reading, not judged
    gauge.next = { delayMs: 1200, utilization: 0.3 };
    vi.advanceTimersByTime(500);
    expect(shedder.state).toEqual({ shedding: 'none', delayMs: 1200, utilization: 0.3 });
    // The same lateness with the loop busy: this process is the one overloaded.
    gauge.next = { delayMs: 1200, utilization: 0.95 };
    vi.advanceTimersByTime(500);
    expect(shedder.shedsAll).toBe(true);
    shedder.close();
  });

  it('reads the loop every interval after the first: up a level at once, down only after the cool-down since the last late reading', () => {
    vi.useFakeTimers();
    const gauge = new FakeGauge();
    const shedder = new LoadShedder(SETTINGS, gauge);
    const levels: string[] = [];
    shedder.on('changed', (level) => levels.push(level));

    // The first interval is the gateway's own start: not judged.
    gauge.next = { delayMs: 5000, utilization: 1 };
    vi.advanceTimersByTime(500);
    expect(shedder.shedsUnauthenticated).toBe(false);

    gauge.next = { delayMs: 80, utilization: 1 };
    vi.advanceTimersByTime(500);
    expect(gauge.reads).toBe(2);
    expect(shedder.shedsUnauthenticated).toBe(true);
    expect(shedder.shedsAll).toBe(false);

    gauge.next = { delayMs: 1200, utilization: 1 };
    vi.advanceTimersByTime(500);
    expect(shedder.shedsAll).toBe(true);
    expect(shedder.state).toEqual({ shedding: 'all', delayMs: 1200, utilization: 1 });

    // On time again: the levels stay for the cool-down (2 s) after their last late reading, then go.
    gauge.next = { delayMs: 0, utilization: 0.2 };
    vi.advanceTimersByTime(1500);
    expect(shedder.shedsAll).toBe(true);
    vi.advanceTimersByTime(500);
    expect(shedder.shedsAll).toBe(false);
    expect(shedder.shedsUnauthenticated).toBe(false);
    expect(levels).toEqual(['unauthenticated', 'all', 'none']);
    shedder.close();
  });

  it('a second level of 0 never sheds everything', () => {
    const shedder = new LoadShedder({ ...SETTINGS, shedAllAtDelayMs: 0, sampleIntervalMs: 3_600_000 });
    shedder.judge({ delayMs: 60_000, utilization: 1 });
    expect(shedder.state.shedding).toBe('unauthenticated');
    shedder.close();
  });

  it('disabled, it never reads the loop and never sheds', () => {
    vi.useFakeTimers();
    const gauge = new FakeGauge();
    const shedder = new LoadShedder({ ...SETTINGS, enabled: false }, gauge);
    shedder.judge({ delayMs: 60_000, utilization: 1 });
    vi.advanceTimersByTime(10_000);
    expect(gauge.reads).toBe(0);
    expect(shedder.shedsUnauthenticated).toBe(false);
    shedder.close();
  });

  it('a blocked event loop is read as late, and shedding starts (the real gauge)', async () => {
    // A blocking hook: the loop is held 600 ms, so its next turn is at least that late, on any machine.
    const shedder = new LoadShedder(
      { ...SETTINGS, sampleIntervalMs: 20, shedUnauthenticatedAtDelayMs: 300, shedAllAtDelayMs: 0 },
      new NodeLoopGauge({ readEveryMs: 20, restBelowUtilization: 0.4 }),
    );
    // Past the first reading (the gateway's start, not judged): this timer is due after the sampler's first.
    await new Promise((resolve) => setTimeout(resolve, 25));
    const changed = nextEvent<[string]>(shedder, 'changed');
    const blockedUntil = performance.now() + 600;
    while (performance.now() < blockedUntil);
    expect((await changed)[0]).toBe('unauthenticated');
    shedder.close();
  });

  it('rests its 10 ms timer while the loop mostly waits, and runs it again once a reading finds the loop busy (the real gauge)', async () => {
    const gauge = new NodeLoopGauge({ readEveryMs: 50, restBelowUtilization: 0.4 });
    expect(gauge.sampling).toBe(true);
    await new Promise((resolve) => setTimeout(resolve, 60));
    expect(gauge.read().utilization).toBeLessThan(0.4);
    expect(gauge.sampling).toBe(false);
    const busyUntil = performance.now() + 60;
    while (performance.now() < busyUntil);
    expect(gauge.read().utilization).toBeGreaterThanOrEqual(0.4);
    expect(gauge.sampling).toBe(true);
    gauge.close();
  });

  it('reads a block that starts while its timer rests as late: the reading itself comes late (the real gauge)', async () => {
    const gauge = new NodeLoopGauge({ readEveryMs: 50, restBelowUtilization: 0.4 });
    await new Promise((resolve) => setTimeout(resolve, 60));
    gauge.read();
    expect(gauge.sampling).toBe(false);
    // The next reading is due 50 ms from the last; the loop is held 300 ms, so it comes at least 250 ms late.
    const blockedUntil = performance.now() + 300;
    while (performance.now() < blockedUntil);
    expect(gauge.read().delayMs).toBeGreaterThanOrEqual(250);
    gauge.close();
  });

  it('never rests when every utilization may shed (minUtilization 0)', async () => {
    const gauge = new NodeLoopGauge({ readEveryMs: 50, restBelowUtilization: 0 });
    await new Promise((resolve) => setTimeout(resolve, 60));
    gauge.read();
    expect(gauge.sampling).toBe(true);
    gauge.close();
  });

  it('refuses a config whose second level is not above the first', () => {
    const base = {
      identity: { provider: 'local', usersFile: '/tmp/users.yaml' },
      tokens: { issuer: 'http://127.0.0.1:8080', keysFile: '/tmp/keys.json' },
    };
    expect(() =>
      parseConfig({ ...base, limits: { loadShedding: { shedUnauthenticatedAtDelayMs: 500, shedAllAtDelayMs: 400 } } }, { baseDir: '/', env: {} }),
    ).toThrow(/limits\.loadShedding\.shedAllAtDelayMs/);
    const config = parseConfig({ ...base, limits: { abuse: { refuseAfterStrikes: 7 } } }, { baseDir: '/', env: {} });
    expect(config.limits.abuse).toMatchObject({ refuseAfterStrikes: 7, holdAfterStrikes: 20, suspectAfterStrikes: 3 });
    expect(config.limits.loadShedding).toMatchObject({ enabled: true, shedUnauthenticatedAtDelayMs: 50, shedAllAtDelayMs: 1000 });
  });
});
