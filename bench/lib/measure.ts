// The measurement every comparison in bench/ shares: interleaved rounds at
// c=N, then at c=1 and at a fixed moderate rate, each run after a warm-up and
// each figure the median of its rounds (so one noisy round cannot decide), and
// CPU per request from the serving process. Throughput comes from wrk or
// autocannon; the c=1 and fixed-rate latencies always from the bench's own
// clients (timed-client.ts), in microseconds whatever generator is installed.
import { load, type LoadResult } from './load.js';
import { paced, sequential } from './timed-client.js';
import type { Row } from './report.js';
import { median } from './stats.js';

export interface Subject {
  name: string;
  url: string;
  headers?: Record<string, string>;
  /** The server's certificate, for an https: URL: the timed clients check it. */
  ca?: string | Buffer;
  /** CPU microseconds the serving process has used so far. */
  cpuMicros(): number;
  /**
   * Drives the load itself (an HTTP/2 client: bench/lib/h2-load.ts) instead of
   * wrk or autocannon on `url`, and its c=1 run too (with latencies in µs); such a row has no fixed-rate run.
   */
  run?(connections: number, durationS: number): Promise<Pick<LoadResult, 'requests' | 'rps' | 'p50Ms' | 'p99Ms' | 'errors'>>;
}

/** One run on a subject: its own driver, or wrk/autocannon on its URL. */
export function drive(subject: Subject, connections: number, durationS: number) {
  return subject.run !== undefined ? subject.run(connections, durationS) : load(subject.url, { connections, durationS, headers: subject.headers ?? {} });
}

export interface MeasureSettings {
  connections: number;
  durationS: number;
  rounds: number;
  /** Requests per second of the fixed-rate latency run; 0 skips it. */
  fixedRate: number;
}

/** 1000 req/s: a moderate load, a fifth or less of what any proxy row sustains here. */
export const DEFAULT_SETTINGS: MeasureSettings = { connections: 50, durationS: 10, rounds: 3, fixedRate: 1000 };

export function settingsFromEnv(overrides: Partial<MeasureSettings> = {}): MeasureSettings {
  const env = process.env;
  return {
    ...DEFAULT_SETTINGS,
    ...(env.BENCH_DURATION_S ? { durationS: Number(env.BENCH_DURATION_S) } : {}),
    ...(env.BENCH_ROUNDS ? { rounds: Number(env.BENCH_ROUNDS) } : {}),
    ...(env.BENCH_FIXED_RATE ? { fixedRate: Number(env.BENCH_FIXED_RATE) } : {}),
    ...overrides,
  };
}

/** Seconds of load on each row before the first measured round. */
const FIRST_WARM_UP_S = 3;

/** Long runs say what they are doing: one line per measured run, on stdout beside the tables. */
function progress(line: string): void {
  process.stdout.write(`[bench]   ${line}\n`);
}

/** Each row's CPU µs per request at c=N, round by round (a section pairs rows measured side by side). */
export type CpuRounds = Map<string, number[]>;

export async function measure(subjects: readonly Subject[], settings: MeasureSettings, cpuRounds?: CpuRounds): Promise<Row[]> {
  const samples = subjects.map(() => ({
    rps: [] as number[],
    p50: [] as number[],
    p99: [] as number[],
    cpu: [] as number[],
    c1P50: [] as number[],
    c1P99: [] as number[],
    fixedP50: [] as number[],
    fixedP99: [] as number[],
    errors: 0,
  }));
  const clientOptions = (subject: Subject, durationS: number) => ({
    durationS,
    headers: subject.headers ?? {},
    ...(subject.ca !== undefined && { ca: subject.ca }),
  });
  // A second of load before every measured run: a process that sat idle while
  // the other rows ran has had its heap shrunk by V8 and starts slower (the
  // first of several rows on one process always came out lowest without it).
  const warm = (subject: Subject) => drive(subject, settings.connections, 1);
  // And a longer one before the first round: a process that has served only a
  // login still runs unoptimised code for its first seconds of load (a
  // Gatehouse read 151 µs a request in its first round, 69 to 108 after).
  progress(`warming up each row (${FIRST_WARM_UP_S} s)`);
  for (const subject of subjects) await drive(subject, settings.connections, FIRST_WARM_UP_S);
  for (let round = 0; round < settings.rounds; round++) {
    for (const [i, subject] of subjects.entries()) {
      await warm(subject);
      const before = subject.cpuMicros();
      const result = await drive(subject, settings.connections, settings.durationS);
      const sample = samples[i]!;
      sample.rps.push(result.rps);
      sample.p50.push(result.p50Ms);
      sample.p99.push(result.p99Ms);
      sample.cpu.push((subject.cpuMicros() - before) / Math.max(1, result.requests));
      cpuRounds?.set(subject.name, sample.cpu);
      sample.errors += result.errors;
      progress(`round ${round + 1}/${settings.rounds} ${subject.name}: ${result.rps.toFixed(0)} req/s, ${sample.cpu.at(-1)!.toFixed(0)} µs CPU/req`);
    }
  }
  // Tail latency is the noisiest figure of all on a shared machine: it too is
  // the median of interleaved rounds, never one run's luck.
  const shortS = Math.max(2, Math.round(settings.durationS / 2));
  progress(`latency runs (c=1${settings.fixedRate > 0 ? ` and ${settings.fixedRate} req/s` : ''}), ${settings.rounds} rounds of ${subjects.length} rows`);
  for (let round = 0; round < settings.rounds; round++) {
    for (const [i, subject] of subjects.entries()) {
      const sample = samples[i]!;
      await warm(subject);
      const single = subject.run !== undefined ? await subject.run(1, shortS) : await sequential(subject.url, clientOptions(subject, shortS));
      sample.c1P50.push(single.p50Ms);
      sample.c1P99.push(single.p99Ms);
      sample.errors += single.errors;
      if (settings.fixedRate > 0 && subject.run === undefined) {
        const fixed = await paced(subject.url, { rate: settings.fixedRate, ...clientOptions(subject, shortS) });
        sample.fixedP50.push(fixed.p50Ms);
        sample.fixedP99.push(fixed.p99Ms);
        sample.errors += fixed.errors;
      }
    }
  }
  return subjects.map((subject, i) => {
    const sample = samples[i]!;
    return {
      name: subject.name,
      rps: median(sample.rps),
      p50Ms: median(sample.p50),
      p99Ms: median(sample.p99),
      c1P50Ms: median(sample.c1P50),
      c1P99Ms: median(sample.c1P99),
      cpuUsPerRequest: median(sample.cpu),
      ...(settings.fixedRate > 0 ? { fixedRateP50Ms: median(sample.fixedP50), fixedRateP99Ms: median(sample.fixedP99) } : {}),
      errors: sample.errors,
    };
  });
}
