// The measurement every comparison in bench/ shares: interleaved rounds at
// c=N (medians, so one noisy round cannot decide), latency at c=1, CPU per
// request from the server process, and p99 at a fixed moderate rate.
import { load } from './load.js';
import { paced } from './paced.js';
import type { Row } from './report.js';
import { median } from './stats.js';

export interface Subject {
  name: string;
  url: string;
  headers?: Record<string, string>;
  /** CPU microseconds the serving process has used so far. */
  cpuMicros(): number;
}

export interface MeasureSettings {
  connections: number;
  durationS: number;
  rounds: number;
  /** Requests per second of the fixed-rate latency run; 0 skips it. */
  fixedRate: number;
}

export const DEFAULT_SETTINGS: MeasureSettings = { connections: 50, durationS: 10, rounds: 3, fixedRate: 2000 };

export function settingsFromEnv(overrides: Partial<MeasureSettings> = {}): MeasureSettings {
  const env = process.env;
  return {
    ...DEFAULT_SETTINGS,
    ...(env.BENCH_DURATION_S ? { durationS: Number(env.BENCH_DURATION_S) } : {}),
    ...(env.BENCH_ROUNDS ? { rounds: Number(env.BENCH_ROUNDS) } : {}),
    ...overrides,
  };
}

export async function measure(subjects: readonly Subject[], settings: MeasureSettings): Promise<Row[]> {
  const samples = subjects.map(() => ({ rps: [] as number[], p50: [] as number[], p99: [] as number[], cpu: [] as number[], errors: 0 }));
  for (const subject of subjects) await load(subject.url, { connections: settings.connections, durationS: 1, headers: subject.headers ?? {} });
  for (let round = 0; round < settings.rounds; round++) {
    for (const [i, subject] of subjects.entries()) {
      const before = subject.cpuMicros();
      const result = await load(subject.url, { connections: settings.connections, durationS: settings.durationS, headers: subject.headers ?? {} });
      const sample = samples[i]!;
      sample.rps.push(result.rps);
      sample.p50.push(result.p50Ms);
      sample.p99.push(result.p99Ms);
      sample.cpu.push((subject.cpuMicros() - before) / Math.max(1, result.requests));
      sample.errors += result.errors;
    }
  }
  const rows: Row[] = [];
  for (const [i, subject] of subjects.entries()) {
    const sample = samples[i]!;
    const single = await load(subject.url, { connections: 1, durationS: Math.max(2, Math.round(settings.durationS / 2)), headers: subject.headers ?? {} });
    const fixed = settings.fixedRate > 0 ? await paced(subject.url, { rate: settings.fixedRate, durationS: Math.max(2, Math.round(settings.durationS / 2)), headers: subject.headers ?? {} }) : undefined;
    rows.push({
      name: subject.name,
      rps: median(sample.rps),
      p50Ms: median(sample.p50),
      p99Ms: median(sample.p99),
      c1P50Ms: single.p50Ms,
      c1P99Ms: single.p99Ms,
      cpuUsPerRequest: median(sample.cpu),
      ...(fixed ? { fixedRateP50Ms: fixed.p50Ms, fixedRateP99Ms: fixed.p99Ms } : {}),
      errors: sample.errors + single.errors + (fixed?.errors ?? 0),
    });
  }
  return rows;
}
