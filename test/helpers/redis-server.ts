// A real redis-server per test file, on a free port, that a test can stop and
// start again (the fault tests take Redis away under a running gateway).
// A missing binary is an error, never a skip: tests that cannot reach Redis
// must not pass by not running.
import { spawn, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { connect, createServer } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';

export interface RedisServerHandle {
  /** `redis://127.0.0.1:<port>`, without credentials even when `args` set a password. */
  url: string;
  port: number;
  /** Kills the server and waits until it has exited; clients see Redis go down. */
  stop(): Promise<void>;
  /** Starts it again on the same port (nothing persisted: it comes back empty). */
  start(): Promise<void>;
  /** Freezes the process (SIGSTOP): connections stay open but nothing answers, like a hung or unreachable host. */
  pause(): Promise<void>;
  /** Lets a paused server go on (SIGCONT). */
  resume(): Promise<void>;
  /** Stops it for good. */
  close(): Promise<void>;
}

export interface RedisServerOptions {
  /** More `redis-server` arguments, e.g. `['--requirepass', 'secret']`. */
  args?: string[];
}

const REDIS_SERVER_BIN = process.env.REDIS_SERVER_BIN ?? 'redis-server';
const HOST = '127.0.0.1';
const READY_TIMEOUT_MS = 10_000;
const STOP_TIMEOUT_MS = 5_000;
/** Another process may take the free port between our probe and Redis' bind. */
const PORT_ATTEMPTS = 3;

export async function startRedisServer(options: RedisServerOptions = {}): Promise<RedisServerHandle> {
  for (let attempt = 1; ; attempt += 1) {
    const server = new RedisServer(await findFreePort(), options.args ?? []);
    try {
      await server.start();
      return server;
    } catch (error) {
      await server.close();
      if (!(error instanceof PortTakenError) || attempt >= PORT_ATTEMPTS) throw error;
    }
  }
}

/** `REDIS_URL` when the environment provides a Redis (CI service), else a fresh redis-server. */
export async function testRedisUrl(): Promise<{ url: string; close(): Promise<void> }> {
  const url = process.env.REDIS_URL;
  if (url) return { url, close: async () => {} };
  const server = await startRedisServer();
  return { url: server.url, close: () => server.close() };
}

/** A key prefix of its own, so tests sharing one Redis never see each other's keys. */
export function uniquePrefix(): string {
  return `test:${randomUUID()}:`;
}

export class PortTakenError extends Error {}

class RedisServer implements RedisServerHandle {
  readonly port: number;
  readonly url: string;
  private readonly args: string[];
  private child: ChildProcess | undefined;
  /** The end of the server's output, for error messages. */
  private output = '';
  private closed = false;

  constructor(port: number, extraArgs: string[]) {
    this.port = port;
    this.url = `redis://${HOST}:${port}`;
    this.args = ['--port', String(port), '--bind', HOST, '--save', '', '--appendonly', 'no', ...extraArgs];
  }

  async start(): Promise<void> {
    if (this.closed) throw new Error('this redis-server handle is closed');
    if (this.child && isRunning(this.child)) return;
    this.output = '';
    const child = await spawnRedisServer(this.args, (chunk) => {
      this.output = (this.output + chunk).slice(-4_000);
    });
    this.child = child;
    killAtExit(child);
    await waitUntilAnswering(child, this.port, () => this.output);
  }

  async pause(): Promise<void> {
    if (!this.child || !isRunning(this.child)) throw new Error('redis-server is not running');
    this.child.kill('SIGSTOP');
  }

  async resume(): Promise<void> {
    if (this.child && isRunning(this.child)) this.child.kill('SIGCONT');
  }

  async stop(): Promise<void> {
    const child = this.child;
    if (!child || !isRunning(child)) return;
    const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
    // A paused server would not act on SIGTERM until continued.
    child.kill('SIGCONT');
    child.kill('SIGTERM');
    const stopped = await Promise.race([exited.then(() => true), sleep(STOP_TIMEOUT_MS, false)]);
    if (!stopped) {
      child.kill('SIGKILL');
      await exited;
    }
  }

  async close(): Promise<void> {
    await this.stop();
    this.closed = true;
  }
}

// A test run that dies half-way must not leave redis-servers behind.
const runningChildren = new Set<ChildProcess>();
process.once('exit', () => {
  for (const child of runningChildren) child.kill('SIGKILL');
});

/** Kills the process when this one exits, if it still runs then. */
export function killAtExit(child: ChildProcess): void {
  runningChildren.add(child);
  child.once('exit', () => runningChildren.delete(child));
}

export function isRunning(child: ChildProcess): boolean {
  return child.exitCode === null && child.signalCode === null;
}

/**
 * Resolves once the server answers PING; rejects with PortTakenError when it
 * exited because its port was taken meanwhile, or with its output when it
 * exited for another reason or did not answer in time.
 */
export async function waitUntilAnswering(child: ChildProcess, port: number, output: () => string): Promise<void> {
  const deadline = Date.now() + READY_TIMEOUT_MS;
  while (Date.now() < deadline) {
    if (!isRunning(child)) {
      if (/address already in use/i.test(output())) throw new PortTakenError(`port ${port} is taken`);
      throw new Error(`redis-server exited at start (code ${child.exitCode}, signal ${child.signalCode}):\n${output()}`);
    }
    if (await answersPing(port)) return;
    await sleep(25);
  }
  child.kill('SIGKILL');
  throw new Error(`redis-server did not answer PING on port ${port} within ${READY_TIMEOUT_MS} ms:\n${output()}`);
}

export async function spawnRedisServer(args: string[], onOutput: (chunk: string) => void): Promise<ChildProcess> {
  const child = spawn(REDIS_SERVER_BIN, args, { stdio: ['ignore', 'pipe', 'pipe'] });
  // Always read the output: a full pipe would block Redis.
  child.stdout?.on('data', (chunk: Buffer) => onOutput(chunk.toString()));
  child.stderr?.on('data', (chunk: Buffer) => onOutput(chunk.toString()));

  await new Promise<void>((resolve, reject) => {
    child.once('spawn', resolve);
    child.once('error', (error: NodeJS.ErrnoException) => {
      reject(
        error.code === 'ENOENT'
          ? new Error(
              `"${REDIS_SERVER_BIN}" was not found: the store tests need a real Redis (>= 6.2). ` +
                'Install it (e.g. `apt-get install redis-server`), set REDIS_SERVER_BIN to its path, ' +
                'or set REDIS_URL to a running Redis.',
            )
          : error,
      );
    });
  });
  return child;
}

/** True once Redis replies to PING; NOAUTH counts, since it comes from a running Redis too. */
function answersPing(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ host: HOST, port });
    const finish = (answered: boolean): void => {
      socket.destroy();
      resolve(answered);
    };
    socket.setTimeout(500, () => finish(false));
    socket.once('error', () => finish(false));
    socket.once('connect', () => socket.write('PING\r\n'));
    socket.once('data', (reply) => finish(/^(\+PONG|-NOAUTH)/.test(reply.toString())));
  });
}

function findFreePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = createServer();
    probe.once('error', reject);
    probe.listen(0, HOST, () => {
      const address = probe.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      probe.close(() => (port ? resolve(port) : reject(new Error('could not find a free port'))));
    });
  });
}
