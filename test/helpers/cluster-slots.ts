// Which node of a test Cluster serves a record: the tests that stop a
// replica must stop the one of the master that holds the record they write.
import calculateSlot from 'cluster-key-slot';
import { command, infoField } from './redis-nodes.js';
import type { ClusterMaster, RedisCluster } from './redis-topology.js';

/** The master serving the slot of the request record `id` (under the `gatehouse:` prefix). */
export async function masterOfRequest(cluster: RedisCluster, id: string): Promise<ClusterMaster> {
  const slot = calculateSlot(`gatehouse:request:{${id}}`);
  const master = (await cluster.masters()).find((m) => m.slots.some(([from, to]) => slot >= from && slot <= to));
  if (master === undefined) throw new Error(`no master serves slot ${slot}`);
  return master;
}

/** The pid of the first replica of that master. */
export async function replicaPidOfRequest(cluster: RedisCluster, id: string): Promise<number> {
  const replica = (await masterOfRequest(cluster, id)).replicas[0];
  if (replica === undefined) throw new Error(`the master serving ${id} has no replica`);
  return Number(infoField(String(await command(replica, 'INFO', 'server')), 'process_id'));
}
