// Prints a benchmark's rows as one table, each row with its ratio to the
// baseline row of the same run, and keeps the same as JSON in bench/results/.
import { mkdirSync, writeFileSync } from 'node:fs';
import { cpus } from 'node:os';
import { join } from 'node:path';

export interface Row {
  name: string;
  rps?: number;
  p50Ms?: number;
  p99Ms?: number;
  c1P50Ms?: number;
  c1P99Ms?: number;
  cpuUsPerRequest?: number;
  errors?: number;
  note?: string;
  /** Anything else a section measures (e.g. sign µs/op). */
  [extra: string]: number | string | undefined;
}

/** A load run as a table row; `cpuMicros`: the server's CPU time spent during the run. */
export function loadRow(
  name: string,
  result: { requests: number; rps: number; p50Ms: number; p99Ms: number; errors: number },
  cpuMicros: number,
  note?: string,
): Row {
  const { rps, p50Ms, p99Ms, errors } = result;
  return { name, rps, p50Ms, p99Ms, cpuUsPerRequest: cpuMicros / Math.max(1, result.requests), errors, ...(note !== undefined && { note }) };
}

const fixed = (value: number | string | undefined, digits: number) =>
  typeof value === 'number' && Number.isFinite(value) ? value.toFixed(digits) : typeof value === 'string' ? value : '—';

export function printTable(title: string, rows: Row[], baseline?: string): void {
  const base = rows.find((r) => r.name === baseline);
  const columns: Array<[string, (r: Row) => string]> = [
    ['row', (r) => r.name],
    ['req/s', (r) => fixed(r.rps, 0)],
    [`× ${baseline ?? 'baseline'}`, (r) => (base?.rps && r.rps ? `${(r.rps / base.rps).toFixed(2)}×` : '—')],
    ['p50 ms', (r) => fixed(r.p50Ms, 2)],
    ['p99 ms', (r) => fixed(r.p99Ms, 2)],
    ['c=1 p50', (r) => fixed(r.c1P50Ms, 3)],
    ['c=1 p99', (r) => fixed(r.c1P99Ms, 3)],
    ['CPU µs/req', (r) => fixed(r.cpuUsPerRequest, 0)],
    ['fixed-rate p99', (r) => fixed(r.fixedRateP99Ms, 3)],
    ['errors', (r) => fixed(r.errors, 0)],
    ['note', (r) => r.note ?? ''],
  ];
  const used = columns.filter(([, cell]) => rows.some((r) => !['—', ''].includes(cell(r))));
  const cells = [used.map(([h]) => h), ...rows.map((r) => used.map(([, cell]) => cell(r)))];
  const widths = used.map((_, i) => Math.max(...cells.map((line) => line[i]!.length)));
  const line = (values: string[]) => `| ${values.map((v, i) => (i === 0 ? v.padEnd(widths[i]!) : v.padStart(widths[i]!))).join(' | ')} |`;
  process.stdout.write(`\n${title}\n${line(cells[0]!)}\n|${widths.map((w) => '-'.repeat(w + 2)).join('|')}|\n${cells.slice(1).map(line).join('\n')}\n`);
}

export function writeResults(section: string, data: unknown): string {
  const dir = join('bench', 'results');
  mkdirSync(dir, { recursive: true });
  const file = join(dir, `${section}-${new Date().toISOString().replace(/[:.]/g, '-')}.json`);
  writeFileSync(
    file,
    JSON.stringify({ section, at: new Date().toISOString(), node: process.version, cpus: cpus().length, cpu: cpus()[0]?.model, data }, null, 2),
  );
  return file;
}
