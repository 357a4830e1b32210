// Log lines to stdout are written in batches: a quiet process still shows its
// line (the batch is flushed on a timer, about once a second), nothing is lost
// at exit (natural or process.exit), and processes sharing one stdout pipe
// (workers) never interleave inside a line.
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { afterEach, expect, it } from 'vitest';

const FIXTURE = 'test/observability/fixtures/log-lines.ts';
/** Copies stdin to stdout 512 bytes at a time. */
const SLOW_READER = [
  "const fs = require('node:fs'); const buf = Buffer.alloc(512); let n;",
  "for (;;) { try { n = fs.readSync(0, buf); } catch (e) { if (e.code === 'EAGAIN') continue; throw e; }",
  'if (n === 0) break; fs.writeSync(1, buf.subarray(0, n)); }',
].join(' ');
const running: Array<ReturnType<typeof spawn>> = [];
afterEach(() => {
  for (const child of running.splice(0)) child.kill('SIGKILL');
});

it('shows a lone line while the process keeps running', async () => {
  // The fixture logs one line, far short of a batch, and stays up for 30 s:
  // only the flush timer can bring the line out before the test times out.
  const child = spawn(process.execPath, ['--import', 'tsx', FIXTURE, 'one'], { stdio: ['ignore', 'pipe', 'inherit'] });
  running.push(child);
  let output = '';
  child.stdout.setEncoding('utf8');
  await new Promise<void>((resolve) => {
    child.stdout.on('data', (chunk: string) => {
      output += chunk;
      if (output.includes('\n')) resolve();
    });
  });
  expect(output).toContain('a lone line');
  expect(child.exitCode).toBeNull();
});

it('writes what is buffered when the process exits', async () => {
  const child = spawn(process.execPath, ['--import', 'tsx', FIXTURE, 'exit'], { stdio: ['ignore', 'pipe', 'inherit'] });
  running.push(child);
  let output = '';
  child.stdout.setEncoding('utf8');
  child.stdout.on('data', (chunk: string) => (output += chunk));
  await once(child, 'close');
  expect(
    output
      .split('\n')
      .filter(Boolean)
      .map((line) => (JSON.parse(line) as { msg: string }).msg),
  ).toEqual(['stopping: draining in-flight requests', 'stopped']);
});

it('hands the kernel whole lines, at most PIPE_BUF (4096 bytes) per write', async () => {
  // What makes a write to a pipe atomic; the test below shows the outcome on a
  // real one. Lines of ~2.5 KiB: two of them pass a batch's 3 KiB threshold,
  // so a batch that took whatever had accumulated would exceed PIPE_BUF.
  const child = spawn(process.execPath, ['--import', 'tsx', FIXTURE, 'burst', '999', '2400'], {
    stdio: ['ignore', 'ignore', 'pipe'],
    env: { ...process.env, WRITE_SIZES: '1' },
  });
  running.push(child);
  let report = '';
  child.stderr.setEncoding('utf8');
  child.stderr.on('data', (chunk: string) => (report += chunk));
  await once(child, 'close');
  const writes = report
    .split('\n')
    .filter((line) => line.startsWith('{'))
    .map((line) => JSON.parse(line) as { bytes: number; wholeLines: boolean });
  expect(writes.length).toBeGreaterThan(100);
  expect(writes.filter((write) => write.bytes > 4096 || !write.wholeLines)).toEqual([]);
});

it('two processes on one pipe: every line whole, none lost', async () => {
  const perWriter = 1999; // not a whole number of batches: the last, partial one is written at exit
  const writer = `"${process.execPath}" --import tsx ${FIXTURE} burst ${perWriter}`;
  // Both writers inherit one pipe, as workers share the primary's stdout. Its
  // reader takes half a kilobyte at a time, so the pipe stays nearly full and
  // the writers meet it part-full: a write larger than PIPE_BUF would then be
  // split, and the other writer's lines land inside it.
  const slowReader = `"${process.execPath}" -e "${SLOW_READER}"`;
  const shell = spawn('sh', ['-c', `(${writer} & ${writer} & wait) | ${slowReader}`], { stdio: ['ignore', 'pipe', 'inherit'] });
  running.push(shell);
  const chunks: Buffer[] = [];
  shell.stdout.on('data', (chunk: Buffer) => chunks.push(chunk));
  const [code] = (await once(shell, 'close')) as [number];
  expect(code).toBe(0);
  const lines = Buffer.concat(chunks).toString('utf8').split('\n').filter(Boolean);
  const parsed = lines.map((line) => {
    try {
      return JSON.parse(line) as { writer: number; i: number };
    } catch {
      return undefined;
    }
  });
  expect(parsed.filter((entry) => entry === undefined)).toHaveLength(0);
  const writers = new Set(parsed.map((entry) => entry!.writer));
  expect(writers.size).toBe(2);
  for (const pid of writers) {
    const seen = parsed.filter((entry) => entry!.writer === pid).map((entry) => entry!.i);
    expect(seen).toEqual(Array.from({ length: perWriter }, (_, i) => i));
  }
}, 60_000);
