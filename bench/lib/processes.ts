// Every server of a benchmark runs in a process of its own, as in production,
// so the load generator and the servers do not share an event loop.
import { spawn, type ChildProcess } from 'node:child_process';
import { readdirSync, readFileSync, readlinkSync } from 'node:fs';
import { createInterface } from 'node:readline';
import { SERVING_V8_FLAGS } from '../../src/cli/heap-tuning.js';

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

/** Resident set size of a process, in MiB. */
export function rssMiB(pid: number): number {
  const line = readFileSync(`/proc/${pid}/status`, 'utf8')
    .split('\n')
    .find((l) => l.startsWith('VmRSS:'))!;
  return Number(line.split(/\s+/)[1]) / 1024;
}

/** File descriptors a process holds open (sockets, files, pipes). */
export function openFds(pid: number): number {
  return readdirSync(`/proc/${pid}/fd`).length;
}

export interface OpenFds {
  total: number;
  /** TCP connections (not listeners) of the process by the port of their far end, IPv4 and IPv6. */
  connectionsByRemotePort: Map<number, number>;
}

/** A process's open fds, its TCP connections counted by remote port (from /proc/PID/net/tcp{,6}). */
export function openFdsByPeer(pid: number): OpenFds {
  const remotePortOfInode = new Map<string, number>();
  for (const table of ['tcp', 'tcp6']) {
    for (const line of readFileSync(`/proc/${pid}/net/${table}`, 'utf8').split('\n').slice(1)) {
      const fields = line.trim().split(/\s+/);
      // local_address rem_address … inode: ports are the hex after the colon; a listener's remote port is 0.
      const remotePort = parseInt(fields[2]?.split(':')[1] ?? '0', 16);
      if (remotePort > 0 && fields[9]) remotePortOfInode.set(fields[9], remotePort);
    }
  }
  const connectionsByRemotePort = new Map<number, number>();
  const fds = readdirSync(`/proc/${pid}/fd`);
  for (const fd of fds) {
    let link: string;
    try {
      link = readlinkSync(`/proc/${pid}/fd/${fd}`);
    } catch {
      continue; // closed between the listing and the read
    }
    const port = remotePortOfInode.get(/^socket:\[(\d+)\]$/.exec(link)?.[1] ?? '');
    if (port !== undefined) connectionsByRemotePort.set(port, (connectionsByRemotePort.get(port) ?? 0) + 1);
  }
  return { total: fds.length, connectionsByRemotePort };
}

/**
 * Starts `node <args>` and waits for its first stdout line: `{"port": N}`. `cpu` pins it (its thread pool included)
 * to that CPU with taskset, which execs the command: the child's pid is the server's own. It runs with the V8 settings
 * of `gatehouse start` (src/cli/heap-tuning.ts).
 */
export async function startServer(name: string, args: string[], env: Record<string, string> = {}, cpu?: number): Promise<ServerProcess> {
  // The V8 settings `gatehouse start` runs with: a baseline row differs from Gatehouse by its code, not by its GC.
  const command = [...(cpu === undefined ? [] : ['taskset', '-c', String(cpu)]), process.execPath, ...SERVING_V8_FLAGS, ...args];
  const child = own(spawn(command[0]!, command.slice(1), { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'inherit'] }));
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
