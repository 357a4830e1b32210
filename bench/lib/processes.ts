// Every server of a benchmark runs in a process of its own, as in production,
// so the load generator and the servers do not share an event loop.
import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createInterface } from 'node:readline';

export interface ServerProcess {
  name: string;
  port: number;
  url: string;
  child: ChildProcess;
  /** CPU time (user + system) the process has used so far, in microseconds. */
  cpuMicros(): number;
  stop(): Promise<void>;
}

const CLOCK_TICKS_PER_S = 100; // USER_HZ on Linux

/** Every server a benchmark started: none may outlive the run, whatever fails. */
const children = new Set<ChildProcess>();
process.once('exit', () => {
  for (const child of children) if (child.exitCode === null) child.kill('SIGKILL');
});

export function own(child: ChildProcess): ChildProcess {
  children.add(child);
  child.once('exit', () => children.delete(child));
  return child;
}

/** CPU time (user + system) a process has used so far, in microseconds. */
export function processCpuMicros(pid: number): number {
  // utime and stime are fields 14 and 15 of /proc/PID/stat; 12 and 13 after the ") " split.
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  return ((Number(fields[11]) + Number(fields[12])) / CLOCK_TICKS_PER_S) * 1e6;
}

/** Starts `node <args>` and waits for its first stdout line: `{"port": N}`. */
export async function startServer(name: string, args: string[], env: Record<string, string> = {}): Promise<ServerProcess> {
  const child = own(spawn(process.execPath, args, { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'inherit'] }));
  const lines = createInterface({ input: child.stdout! });
  const port = await new Promise<number>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`${name} did not start`)), 20_000);
    child.once('exit', (code) => reject(new Error(`${name} exited with ${code}`)));
    lines.on('line', (line) => {
      try {
        const parsed = JSON.parse(line) as { port?: number };
        if (parsed.port) {
          clearTimeout(timer);
          resolve(parsed.port);
        }
      } catch {
        // a log line: not ours to read
      }
    });
  });
  child.stdout!.resume();
  return {
    name,
    port,
    url: `http://127.0.0.1:${port}`,
    child,
    cpuMicros: () => processCpuMicros(child.pid!),
    stop: () => stopProcess(child),
  };
}

export async function stopProcess(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null) return;
  const exited = new Promise((resolve) => child.once('exit', resolve));
  child.kill('SIGTERM');
  await exited;
}
