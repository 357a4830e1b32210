// The Kubernetes manifests users will copy (deploy/kubernetes/) agree with
// the config they mount: the ConfigMap's gatehouse.yaml is loaded through the
// real loader, with the environment the Deployment gives the container (its
// Secret's values resolved), and ports, probe paths, the termination grace,
// mounts and environment are checked against that config.
import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join, posix } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import { ENV_OVERRIDES, loadConfig } from '../../src/config-load/load.js';
import type { Config } from '../../src/config/schema.js';
import { LIVENESS_PATH, READINESS_PATH } from '../../src/http/gateway-paths.js';
import { parseStoreUrl } from '../../src/store/store-url.js';

const DIR = join(dirname(fileURLToPath(import.meta.url)), '../../deploy/kubernetes');

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- manifests are untyped YAML; each read is checked by an expectation
type Manifest = Record<string, any>;

let manifests: Manifest[];
let files: string[];
let config: Config;
let scratch: string;

function one(kind: string, name?: string): Manifest {
  const found = manifests.filter((m) => m.kind === kind && (name === undefined || m.metadata?.name === name));
  expect(found, `${kind} ${name ?? ''}`).toHaveLength(1);
  return found[0]!;
}

const deployment = () => one('Deployment');
const podSpec = () => deployment().spec.template.spec;
const container = () => podSpec().containers[0];
const containerPort = (name: string): number => container().ports.find((p: Manifest) => p.name === name)?.containerPort;

/** The container's environment with each secretKeyRef resolved from the Secret manifests. */
function containerEnv(): Record<string, string> {
  const env: Record<string, string> = {};
  for (const entry of container().env as Manifest[]) {
    if (entry.value !== undefined) env[entry.name] = String(entry.value);
    else {
      const { name, key } = entry.valueFrom.secretKeyRef;
      const value = one('Secret', name).stringData?.[key];
      expect(value, `${name}.${key}`).toBeTypeOf('string');
      env[entry.name] = value;
    }
  }
  return env;
}

/** The volume mounted at the longest mount path containing `file`, and the path inside it. */
function volumeHolding(file: string): { volume: Manifest; mount: Manifest; inside: string } {
  const mounts = (container().volumeMounts as Manifest[]).filter((m) => file.startsWith(`${m.mountPath}/`));
  const mount = mounts.sort((a, b) => b.mountPath.length - a.mountPath.length)[0];
  expect(mount, `a volume holding ${file}`).toBeDefined();
  const volume = (podSpec().volumes as Manifest[]).find((v) => v.name === mount!.name)!;
  return { volume, mount: mount!, inside: posix.relative(mount!.mountPath, file) };
}

beforeAll(async () => {
  files = (await readdir(DIR)).filter((f) => f.endsWith('.yaml')).sort();
  manifests = [];
  for (const file of files) {
    if (file === 'kustomization.yaml') continue;
    for (const doc of parseAllDocuments(await readFile(join(DIR, file), 'utf8'))) {
      expect(doc.errors, file).toStrictEqual([]);
      manifests.push(doc.toJS() as Manifest);
    }
  }
  // The config the pods run: the ConfigMap's file, read by the real loader with the container's environment.
  scratch = await mkdtemp(join(tmpdir(), 'gatehouse-k8s-'));
  const configFile = join(scratch, 'gatehouse.yaml');
  await writeFile(configFile, one('ConfigMap', 'gatehouse-config').data['gatehouse.yaml']);
  config = loadConfig({ file: configFile, env: containerEnv() });
});

afterAll(async () => {
  await rm(scratch, { recursive: true, force: true });
});

describe('deploy/kubernetes', () => {
  it('lists every manifest in its kustomization', async () => {
    const kustomization = parseAllDocuments(await readFile(join(DIR, 'kustomization.yaml'), 'utf8'))[0]!.toJS() as Manifest;
    expect([...kustomization.resources].sort()).toStrictEqual(files.filter((f) => f !== 'kustomization.yaml'));
  });

  it('runs three replicas that roll one new pod in before an old one goes', () => {
    expect(deployment().spec.replicas).toBe(3);
    expect(deployment().spec.strategy.rollingUpdate).toStrictEqual({ maxSurge: 1, maxUnavailable: 0 });
    expect(deployment().spec.selector.matchLabels).toStrictEqual(deployment().spec.template.metadata.labels);
  });

  it('mounts the config at the path GATEHOUSE_CONFIG names, and the environment it sets is one the loader reads', () => {
    const env = containerEnv();
    const { volume, inside } = volumeHolding(env.GATEHOUSE_CONFIG!);
    expect(volume.configMap.name).toBe('gatehouse-config');
    expect(Object.keys(one('ConfigMap', 'gatehouse-config').data)).toContain(inside);
    const known = new Set(['GATEHOUSE_CONFIG', ...ENV_OVERRIDES.map((o) => o.env)]);
    for (const name of Object.keys(env)) expect(known, name).toContain(name);
  });

  it('gives the config the service token and a Sentinel Redis from the Secret', () => {
    expect(config.requests.serviceToken).toBe(one('Secret', 'gatehouse-secrets').stringData.GATEHOUSE_SERVICE_TOKEN);
    expect(parseStoreUrl(config.store.url!).mode).toBe('sentinel');
  });

  it('exposes the ports the config listens on, and probes /healthz and /readyz on the admin port', () => {
    expect(containerPort('http')).toBe(config.server.port);
    expect(containerPort('admin')).toBe(config.admin.port);
    expect(config.admin.enabled).toBe(true);
    // The kubelet probes the pod IP: the admin listener must not be on loopback only.
    expect(config.admin.host).toBe('0.0.0.0');
    const { readinessProbe, livenessProbe, startupProbe } = container();
    expect(readinessProbe.httpGet).toStrictEqual({ path: READINESS_PATH, port: 'admin' });
    expect(livenessProbe.httpGet).toStrictEqual({ path: LIVENESS_PATH, port: 'admin' });
    expect(startupProbe.httpGet).toStrictEqual({ path: LIVENESS_PATH, port: 'admin' });
  });

  it('lets the drain finish: the termination grace is above the preStop pause plus server.shutdownGraceS', () => {
    const command = container().lifecycle.preStop.exec.command as string[];
    expect(command[0]).toBe('sleep');
    const pauseS = Number(command[1]);
    expect(podSpec().terminationGracePeriodSeconds).toBeGreaterThan(pauseS + config.server.shutdownGraceS);
  });

  it("keeps each pod's keys file and journal on a writable volume of its own, the users in Redis, and their seed in the one Secret", () => {
    for (const file of [config.tokens.keysFile!, join(config.requests.journalDir, 'x')]) {
      const { volume, mount } = volumeHolding(file);
      expect(volume.emptyDir, file).toBeDefined();
      expect(mount.readOnly ?? false).toBe(false);
    }
    const identity = config.identity;
    expect(identity.provider).toBe('local');
    // A `users disable` in one pod reaches every pod at once only when the users are in the store.
    expect(identity.provider === 'local' && identity.usersIn).toBe('store');
    expect(config.store.url).toMatch(/^redis-sentinel:/);
    const usersFile = identity.provider === 'local' ? identity.usersFile : '';
    const { volume, mount, inside } = volumeHolding(usersFile);
    expect(mount.readOnly).toBe(true);
    expect(Object.keys(one('Secret', volume.secret.secretName).stringData)).toContain(inside);
  });

  it('puts the public port on the Service, and never the admin port', () => {
    const ports = one('Service').spec.ports as Manifest[];
    expect(ports.map((p) => p.targetPort)).toStrictEqual(['http']);
    expect(one('Service').spec.selector).toStrictEqual(deployment().spec.template.metadata.labels);
  });

  it('lets anyone reach the public port and only monitoring and reporting backends the admin port', () => {
    const policy = one('NetworkPolicy');
    expect(policy.spec.podSelector.matchLabels).toStrictEqual(deployment().spec.template.metadata.labels);
    expect(policy.spec.policyTypes).toContain('Ingress');
    for (const rule of policy.spec.ingress as Manifest[]) {
      const ports = (rule.ports as Manifest[]).map((p) => p.port);
      if (rule.from === undefined) expect(ports).toStrictEqual(['http']);
      else expect(ports).toStrictEqual(['admin']);
    }
    expect((policy.spec.ingress as Manifest[]).some((rule) => rule.from !== undefined)).toBe(true);
  });

  it('keeps a majority serving through disruptions and scales on CPU from the three replicas up', () => {
    const pdb = one('PodDisruptionBudget');
    expect(pdb.spec.selector.matchLabels).toStrictEqual(deployment().spec.template.metadata.labels);
    expect(pdb.spec.minAvailable).toBeLessThan(deployment().spec.replicas);
    const hpa = one('HorizontalPodAutoscaler');
    expect(hpa.spec.scaleTargetRef).toMatchObject({ kind: 'Deployment', name: deployment().metadata.name });
    expect(hpa.spec.minReplicas).toBe(deployment().spec.replicas);
    expect(hpa.spec.metrics).toStrictEqual([{ type: 'Resource', resource: { name: 'cpu', target: { type: 'Utilization', averageUtilization: 70 } } }]);
    // The autoscaler needs a CPU request to compute utilisation against.
    expect(container().resources.requests.cpu).toBeDefined();
  });
});
