// The parts Redis test topologies (redis-topology.ts) are built of: a set of
// redis-server processes on free ports with one temporary directory, that
// stops every one of them and removes the directory on close; one-off
// commands to a node and readers of their replies; and waiting until the
// nodes report a state.
import type { ChildProcess } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { Redis } from 'ioredis';
import { freePort } from './ports.js';
import { isRunning, killAtExit, PortTakenError, spawnRedisServer, waitUntilAnswering } from './redis-server.js';

export const HOST = '127.0.0.1';
const PORT_ATTEMPTS = 3;
const POLL_INTERVAL_MS = 100;
const COMMAND_TIMEOUT_MS = 2_000;

export interface RedisNode {
  readonly port: number;
  readonly pid: number;
  readonly running: boolean;
  /** The end of its output, for error messages. */
  output(): string;
  /** SIGKILL, as a crash; resolves once the process is gone. */
  kill(): Promise<void>;
}

/** The arguments of a data node (not a sentinel): loopback, nothing persisted, replicas synced at once. */
export function dataNodeArgs(dir: string, port: number): string[] {
  return ['--port', String(port), '--bind', HOST, '--dir', dir, '--save', '', '--appendonly', 'no', '--repl-diskless-sync-delay', '0'];
}

export class RedisNodeSet {
  readonly dir: string;
  readonly #nodes: RedisNode[] = [];
  #closed = false;

  static async create(name: string): Promise<RedisNodeSet> {
    return new RedisNodeSet(await mkdtemp(join(tmpdir(), `gatehouse-${name}-`)));
  }

  private constructor(dir: string) {
    this.dir = dir;
  }

  get nodes(): readonly RedisNode[] {
    return this.#nodes;
  }

  node(port: number): RedisNode {
    const node = this.#nodes.find((candidate) => candidate.port === port);
    if (node === undefined) throw new Error(`no redis-server of this topology listens on port ${port}`);
    return node;
  }

  /**
   * Starts a redis-server with the arguments made for a free port, and waits
   * until it answers. Another process may take the port (or another port
   * `args` picks) before Redis binds it: then it tries again on new ones.
   */
  async launch(args: (port: number) => Promise<string[]> | string[]): Promise<RedisNode> {
    for (let attempt = 1; ; attempt += 1) {
      if (this.#closed) throw new Error('this set of redis-servers is closed');
      const port = await freePort();
      let output = '';
      const child = await spawnRedisServer(await args(port), (chunk) => {
        output = (output + chunk).slice(-4_000);
      });
      killAtExit(child);
      const node = new Node(port, child, () => output);
      // Listed at once, so close() stops it even if it never answers.
      this.#nodes.push(node);
      try {
        await waitUntilAnswering(child, port, () => output);
        return node;
      } catch (error) {
        await node.kill();
        this.#nodes.splice(this.#nodes.indexOf(node), 1);
        if (!(error instanceof PortTakenError) || attempt >= PORT_ATTEMPTS) throw error;
      }
    }
  }

  /** The output of every node, for an error message that explains a timeout. */
  outputs(): string {
    return this.#nodes.map((node) => `--- redis-server :${node.port}${node.running ? '' : ' (stopped)'}\n${node.output()}`).join('\n');
  }

  /** Kills every process and removes the directory. Idempotent. */
  async close(): Promise<void> {
    this.#closed = true;
    await Promise.all(this.#nodes.map((node) => node.kill()));
    await rm(this.dir, { recursive: true, force: true });
  }
}

class Node implements RedisNode {
  readonly port: number;
  readonly output: () => string;
  readonly #child: ChildProcess;

  constructor(port: number, child: ChildProcess, output: () => string) {
    this.port = port;
    this.#child = child;
    this.output = output;
  }

  get pid(): number {
    return this.#child.pid ?? 0;
  }

  get running(): boolean {
    return isRunning(this.#child);
  }

  async kill(): Promise<void> {
    if (!this.running) return;
    const exited = new Promise<void>((resolve) => this.#child.once('exit', () => resolve()));
    this.#child.kill('SIGKILL');
    await exited;
  }
}

/** Sends one command to one node on a connection of its own; rejects when the node does not answer. */
export async function command(port: number, ...args: Array<string | number>): Promise<unknown> {
  const client = new Redis({
    host: HOST,
    port,
    lazyConnect: true,
    enableReadyCheck: false,
    enableOfflineQueue: false,
    maxRetriesPerRequest: 0,
    retryStrategy: () => null,
    connectTimeout: COMMAND_TIMEOUT_MS,
    commandTimeout: COMMAND_TIMEOUT_MS,
  });
  // Errors reach the caller through the rejected command; this keeps ioredis from also reporting them.
  client.on('error', () => {});
  try {
    await client.connect();
    const [name, ...rest] = args;
    return await client.call(String(name), ...rest);
  } finally {
    client.disconnect();
  }
}

/** A field of an INFO reply (`role`, `master_link_status`, …). */
export function infoField(info: string, field: string): string | undefined {
  return new RegExp(`^${field}:(.*?)\\r?$`, 'm').exec(info)?.[1];
}

/**
 * Asks `probe` until it returns a value (not undefined or false); a probe
 * that throws counts as not yet (a node may be restarting). Rejects after
 * `timeoutMs` naming what was awaited, with the nodes' output.
 */
export async function until<T>(what: string, probe: () => Promise<T | undefined | false>, timeoutMs: number, nodes: RedisNodeSet): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let lastError: unknown;
  for (;;) {
    try {
      const value = await probe();
      if (value !== undefined && value !== false) return value;
    } catch (error) {
      lastError = error;
    }
    if (Date.now() > deadline) {
      const cause = lastError instanceof Error ? ` (last error: ${lastError.message})` : '';
      throw new Error(`timed out after ${timeoutMs} ms waiting until ${what}${cause}\n${nodes.outputs()}`);
    }
    await sleep(POLL_INTERVAL_MS);
  }
}

/**
 * Resolves once every replica of the master on `port` has received all the
 * master had written when the call was made, so a test can fail it over
 * without losing writes to asynchronous replication.
 */
export async function waitForReplicas(port: number, nodes: RedisNodeSet, timeoutMs = 10_000): Promise<void> {
  const target = Number(infoField(String(await command(port, 'INFO', 'replication')), 'master_repl_offset'));
  await until(
    `the replicas of :${port} reach offset ${target}`,
    async () => {
      const info = String(await command(port, 'INFO', 'replication'));
      const replicas = [...info.matchAll(/^slave\d+:.*state=(\w+),offset=(\d+)/gm)];
      return replicas.length > 0 && replicas.every(([, state, offset]) => state === 'online' && Number(offset) >= target);
    },
    timeoutMs,
    nodes,
  );
}

/** `master` or `slave`, as the node itself says (ROLE). */
export async function roleOf(port: number): Promise<string> {
  const [role] = (await command(port, 'ROLE')) as [string];
  return role;
}

export interface ClusterMaster {
  port: number;
  /** Inclusive slot ranges. */
  slots: Array<[number, number]>;
  replicas: number[];
}

/** A Sentinel reply of alternating names and values, as an object. */
export function replyFields(flat: string[]): Record<string, string> {
  const result: Record<string, string> = {};
  for (let i = 0; i + 1 < flat.length; i += 2) result[flat[i]!] = flat[i + 1]!;
  return result;
}

/**
 * The masters serving slots in a CLUSTER NODES reply (a new node is a master
 * without slots until it learns it is a replica). A line reads
 * `<id> <ip:port@bus> <flags> <master id or -> <ping> <pong> <epoch> <link> <slots…>`;
 * slots are `n` or `n-m` (bracketed entries are migrations under way).
 */
export function parseMasters(reply: string): ClusterMaster[] {
  const lines = reply
    .trim()
    .split('\n')
    .map((line) => line.trim().split(' '));
  const portOf = (address: string): number => Number(address.split('@')[0]!.split(':').pop());
  const isUp = (flags: string): boolean => !/fail|handshake|noaddr/.test(flags);
  return lines
    .filter(([, , flags = '', , , , , , ...slots]) => flags.split(',').includes('master') && isUp(flags) && slots.length > 0)
    .map(([id, address = '', , , , , , , ...slots]) => ({
      port: portOf(address),
      slots: slots
        .filter((slot) => !slot.startsWith('['))
        .map((slot): [number, number] => {
          const [from = '', to = from] = slot.split('-');
          return [Number(from), Number(to)];
        }),
      replicas: lines.filter(([, , flags = '', masterId]) => masterId === id && isUp(flags)).map(([, replicaAddress = '']) => portOf(replicaAddress)),
    }));
}
