// Real Redis topologies for the failover tests, on free ports in a temporary
// directory: a Sentinel set (one master, one replica, three sentinels) and a
// Cluster (three masters, each with a replica). Timeouts are short, so a
// crash failover takes seconds, not the production default of half a minute.
// `close()` kills every process and removes the directory; call it in
// `afterAll`, where it runs even when a test failed.
import { execFile } from 'node:child_process';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { freePort } from './ports.js';
import {
  command,
  dataNodeArgs,
  HOST,
  infoField,
  parseMasters,
  RedisNodeSet,
  replyFields,
  roleOf,
  until,
  waitForReplicas,
  type ClusterMaster,
  type RedisNode,
} from './redis-nodes.js';

export type { ClusterMaster } from './redis-nodes.js';

const REDIS_CLI_BIN = process.env.REDIS_CLI_BIN ?? 'redis-cli';
/** A node that does not answer for this long is down (Sentinel's down-after-milliseconds, Cluster's node timeout). */
const DOWN_AFTER_MS = 1_000;
/** Sentinel: how long a failover may take, and twice it, how long before a failed one is tried again. */
const FAILOVER_TIMEOUT_MS = 3_000;
/** Generous bounds on what takes a few seconds, for a loaded machine; a timeout is a failure. */
const AGREEMENT_TIMEOUT_MS = 20_000;
const FAILOVER_WAIT_MS = 30_000;

export interface HostPort {
  host: string;
  port: number;
}

export interface TopologyProcesses {
  /** Pids of every process the topology started, to prove none is left after `close()`. */
  readonly pids: number[];
  /** The temporary directory of its config and data files, removed by `close()`. */
  readonly dir: string;
  close(): Promise<void>;
}

export interface SentinelSet extends TopologyProcesses {
  readonly masterName: string;
  /** What `new Redis({ sentinels, name: masterName })` takes. */
  readonly sentinels: HostPort[];
  /**
   * Resolves with the master's port once every sentinel names it, knows the
   * other sentinels and knows a replica that is in sync: a failover can start.
   */
  waitForAgreement(): Promise<number>;
  /** Resolves once the master's replicas hold all it has written. */
  waitForReplication(): Promise<void>;
  /** `SENTINEL FAILOVER`: resolves with the new master's port once every sentinel names it and it says it is master. */
  failover(): Promise<number>;
  /** Kills the master (SIGKILL): resolves with the new master's port once the sentinels promoted the replica. */
  killMaster(): Promise<number>;
}

export interface RedisCluster extends TopologyProcesses {
  /** What `new Redis.Cluster(nodes)` takes. */
  readonly nodes: HostPort[];
  /** The masters that serve slots, as the cluster sees them. */
  masters(): Promise<ClusterMaster[]>;
  /** Resolves once the replicas of the master on `port` hold all it has written. */
  waitForReplication(port: number): Promise<void>;
  /**
   * Kills a master (SIGKILL), by default the first; resolves once its replica
   * took over and every node left reports `cluster_state:ok`.
   */
  killMaster(port?: number): Promise<{ killed: ClusterMaster; promoted: number }>;
}

export async function startSentinelSet(masterName = 'gatehouse'): Promise<SentinelSet> {
  const nodes = await RedisNodeSet.create('sentinel');
  try {
    const master = await nodes.launch((port) => dataNodeArgs(nodes.dir, port));
    await nodes.launch((port) => [...dataNodeArgs(nodes.dir, port), '--replicaof', HOST, String(master.port)]);
    // Sentinels learn of replicas from the master's INFO: start them once the replica is there.
    await waitForReplicas(master.port, nodes);
    const sentinels: RedisNode[] = [];
    for (let i = 0; i < 3; i += 1) {
      sentinels.push(await nodes.launch((port) => writeSentinelConfig(nodes.dir, port, masterName, master.port)));
    }
    const set = new Sentinels(nodes, sentinels, masterName);
    await set.waitForAgreement();
    return set;
  } catch (error) {
    await nodes.close();
    throw error;
  }
}

/** A sentinel rewrites its config file: each gets its own. */
async function writeSentinelConfig(dir: string, port: number, name: string, masterPort: number): Promise<string[]> {
  const file = join(dir, `sentinel-${port}.conf`);
  const lines = [
    `port ${port}`,
    `bind ${HOST}`,
    `dir ${dir}`,
    `sentinel monitor ${name} ${HOST} ${masterPort} 2`,
    `sentinel down-after-milliseconds ${name} ${DOWN_AFTER_MS}`,
    `sentinel failover-timeout ${name} ${FAILOVER_TIMEOUT_MS}`,
  ];
  await writeFile(file, `${lines.join('\n')}\n`);
  return [file, '--sentinel'];
}

class Sentinels implements SentinelSet {
  readonly masterName: string;
  readonly sentinels: HostPort[];
  readonly #nodes: RedisNodeSet;
  readonly #sentinels: RedisNode[];

  constructor(nodes: RedisNodeSet, sentinels: RedisNode[], masterName: string) {
    this.#nodes = nodes;
    this.#sentinels = sentinels;
    this.masterName = masterName;
    this.sentinels = sentinels.map((sentinel) => ({ host: HOST, port: sentinel.port }));
  }

  get pids(): number[] {
    return this.#nodes.nodes.map((node) => node.pid);
  }

  get dir(): string {
    return this.#nodes.dir;
  }

  waitForAgreement(): Promise<number> {
    return until('the sentinels agree on a master with a replica in sync', () => this.#agreedMaster(), AGREEMENT_TIMEOUT_MS, this.#nodes);
  }

  async waitForReplication(): Promise<void> {
    await waitForReplicas(await this.waitForAgreement(), this.#nodes);
  }

  async failover(): Promise<number> {
    const old = await this.waitForAgreement();
    await command(this.#sentinels[0]!.port, 'SENTINEL', 'FAILOVER', this.masterName);
    return this.#waitForNewMaster(old);
  }

  async killMaster(): Promise<number> {
    const old = await this.waitForAgreement();
    await this.#nodes.node(old).kill();
    return this.#waitForNewMaster(old);
  }

  close(): Promise<void> {
    return this.#nodes.close();
  }

  /** The master's port if every sentinel is ready for a failover, else undefined. */
  async #agreedMaster(): Promise<number | undefined> {
    const views = await Promise.all(
      this.#sentinels.map(async ({ port }) => {
        const master = replyFields((await command(port, 'SENTINEL', 'MASTER', this.masterName)) as string[]);
        const replicas = ((await command(port, 'SENTINEL', 'REPLICAS', this.masterName)) as string[][]).map(replyFields);
        const ready =
          master.flags === 'master' &&
          Number(master['num-other-sentinels']) === this.#sentinels.length - 1 &&
          replicas.some((replica) => replica.flags === 'slave' && replica['master-link-status'] === 'ok');
        return ready ? Number(master.port) : undefined;
      }),
    );
    const [first] = views;
    return first !== undefined && views.every((port) => port === first) ? first : undefined;
  }

  #waitForNewMaster(old: number): Promise<number> {
    return until(
      `the sentinels name a new master in place of :${old}`,
      async () => {
        const named = await Promise.all(
          this.#sentinels.map(async ({ port }) =>
            Number(((await command(port, 'SENTINEL', 'GET-MASTER-ADDR-BY-NAME', this.masterName)) as [string, string])[1]),
          ),
        );
        const [port] = named;
        if (port === undefined || port === old || !named.every((other) => other === port)) return undefined;
        return (await roleOf(port)) === 'master' ? port : undefined;
      },
      FAILOVER_WAIT_MS,
      this.#nodes,
    );
  }
}

/**
 * A fresh Cluster of three masters, each with `replicasEach` replicas (1 by
 * default: 6 nodes; 0 is the usual development and staging cluster).
 * `redis-cli --cluster create` now and then fails on a loaded machine (a node
 * slow to agree within its wait, a port taken between its check and its
 * bind); a second try on fresh nodes and ports is what an operator would do,
 * and it keeps the suite's answer about Gatehouse.
 */
export async function startCluster(replicasEach: 0 | 1 = 1): Promise<RedisCluster> {
  try {
    return await startClusterOnce(replicasEach);
  } catch {
    return await startClusterOnce(replicasEach);
  }
}

async function startClusterOnce(replicasEach: 0 | 1): Promise<RedisCluster> {
  const nodes = await RedisNodeSet.create('cluster');
  try {
    await Promise.all(
      Array.from({ length: 3 * (1 + replicasEach) }, () =>
        nodes.launch(async (port) => [
          ...dataNodeArgs(nodes.dir, port),
          '--cluster-enabled',
          'yes',
          '--cluster-config-file',
          `nodes-${port}.conf`,
          // Named, not port + 10000: that one may be taken or out of range.
          '--cluster-port',
          String(await freePort()),
          '--cluster-node-timeout',
          String(DOWN_AFTER_MS),
          // Replicas here are always fresh: let any of them take over.
          '--cluster-replica-validity-factor',
          '0',
        ]),
      ),
    );
    const addresses = nodes.nodes.map((node) => `${HOST}:${node.port}`);
    await promisify(execFile)(REDIS_CLI_BIN, ['--cluster', 'create', ...addresses, '--cluster-replicas', String(replicasEach), '--cluster-yes'], {
      timeout: AGREEMENT_TIMEOUT_MS,
    });
    const cluster = new Cluster(nodes);
    await cluster.waitUntilHealthy(replicasEach);
    return cluster;
  } catch (error) {
    await nodes.close();
    throw error;
  }
}

class Cluster implements RedisCluster {
  readonly nodes: HostPort[];
  readonly #nodes: RedisNodeSet;

  constructor(nodes: RedisNodeSet) {
    this.#nodes = nodes;
    this.nodes = nodes.nodes.map((node) => ({ host: HOST, port: node.port }));
  }

  get pids(): number[] {
    return this.#nodes.nodes.map((node) => node.pid);
  }

  get dir(): string {
    return this.#nodes.dir;
  }

  /**
   * Every running node says the cluster is ok (all slots served by a master
   * it can reach) and, when `replicasEach` is given, sees three masters with
   * that many replicas each: a new cluster's nodes learn roles by gossip.
   */
  async waitUntilHealthy(replicasEach?: number): Promise<void> {
    await until(
      replicasEach === undefined ? 'every node reports cluster_state:ok' : `every node sees 3 masters with ${replicasEach} replica(s) each`,
      async () => {
        for (const node of this.#running()) {
          if (infoField(String(await command(node.port, 'CLUSTER', 'INFO')), 'cluster_state') !== 'ok') return false;
          if (replicasEach === undefined) continue;
          const masters = parseMasters(String(await command(node.port, 'CLUSTER', 'NODES')));
          if (masters.length !== 3 || masters.some((master) => master.replicas.length !== replicasEach)) return false;
        }
        return true;
      },
      AGREEMENT_TIMEOUT_MS,
      this.#nodes,
    );
  }

  async masters(): Promise<ClusterMaster[]> {
    const [anyNode] = this.#running();
    if (anyNode === undefined) throw new Error('no node of the cluster runs');
    return parseMasters(String(await command(anyNode.port, 'CLUSTER', 'NODES')));
  }

  waitForReplication(port: number): Promise<void> {
    return waitForReplicas(port, this.#nodes);
  }

  async killMaster(port?: number): Promise<{ killed: ClusterMaster; promoted: number }> {
    const masters = await this.masters();
    const killed = port === undefined ? masters[0] : masters.find((master) => master.port === port);
    if (killed === undefined || killed.replicas.length === 0) throw new Error(`no master with a replica on port ${port}`);
    await this.#nodes.node(killed.port).kill();
    const promoted = await until(
      `a replica of :${killed.port} takes over and the cluster is ok again`,
      async () => {
        for (const replica of killed.replicas) {
          if ((await roleOf(replica)) !== 'master') continue;
          await this.waitUntilHealthy();
          return replica;
        }
        return undefined;
      },
      FAILOVER_WAIT_MS,
      this.#nodes,
    );
    return { killed, promoted };
  }

  close(): Promise<void> {
    return this.#nodes.close();
  }

  #running(): RedisNode[] {
    return this.#nodes.nodes.filter((node) => node.running);
  }
}
