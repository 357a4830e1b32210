// The Kubernetes overlays (deploy/kubernetes/overlays/*), as `kubectl
// kustomize` builds them with secret files made by their documented
// commands, agree with the config they mount: the ConfigMap's gatehouse.yaml
// is loaded through the real loader with the environment the Deployment gives
// the container (its Secret's values resolved), and ports, probe paths, the
// termination grace, mounts, the Redis each overlay names, the Ingress and
// the trusted proxies are checked against that config.
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, posix } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { ENV_OVERRIDES, loadConfig } from '../../src/config-load/load.js';
import type { Config } from '../../src/config/schema.js';
import { requestUrl } from '../../src/dpop/request-url.js';
import { compileClientAddress } from '../../src/http/client-address.js';
import { LIVENESS_PATH, READINESS_PATH } from '../../src/http/gateway-paths.js';
import { parseStoreUrl } from '../../src/store/store-url.js';
import { runGatehouse } from '../helpers/cli.js';
import { buildAll, OVERLAYS, ROOT, type Builds, type Manifest, type Overlay } from './kustomize-build.js';

let builds: Builds;
let scratch: string;

beforeAll(() => {
  builds = buildAll();
  scratch = mkdtempSync(join(tmpdir(), 'gatehouse-k8s-config-'));
}, 60_000);

afterAll(() => {
  builds?.remove();
  if (scratch !== undefined) rmSync(scratch, { recursive: true, force: true });
});

/** One overlay's objects, and the reads every check shares. */
function overlay(name: Overlay) {
  const manifests = (): Manifest[] => builds.manifests.get(name)!;
  const one = (kind: string, objectName?: string): Manifest => {
    const found = manifests().filter((m) => m.kind === kind && (objectName === undefined || m.metadata?.name === objectName));
    expect(found, `${name}: ${kind} ${objectName ?? ''}`).toHaveLength(1);
    return found[0]!;
  };
  const deployment = () => one('Deployment', 'gatehouse');
  const podSpec = () => deployment().spec.template.spec;
  const container = () => podSpec().containers[0];
  const containerPort = (port: string): number => container().ports.find((p: Manifest) => p.name === port)?.containerPort;
  /** A Secret's value as the pod reads it (kustomize writes generated Secrets base64-encoded under data). */
  const secretValue = (secret: string, key: string): string => {
    const encoded = one('Secret', secret).data?.[key];
    expect(encoded, `${secret}.${key}`).toBeTypeOf('string');
    return Buffer.from(encoded as string, 'base64').toString('utf8');
  };
  /** The container's environment with each secretKeyRef resolved from the built Secret. */
  const containerEnv = (): Record<string, string> => {
    const env: Record<string, string> = {};
    for (const entry of container().env as Manifest[]) {
      env[entry.name] = entry.value !== undefined ? String(entry.value) : secretValue(entry.valueFrom.secretKeyRef.name, entry.valueFrom.secretKeyRef.key);
    }
    return env;
  };
  /** The volume mounted at the longest mount path containing `file`, and the path inside it. */
  const volumeHolding = (file: string): { volume: Manifest; mount: Manifest; inside: string } => {
    const mounts = (container().volumeMounts as Manifest[]).filter((m) => file.startsWith(`${m.mountPath}/`));
    const mount = mounts.sort((a, b) => b.mountPath.length - a.mountPath.length)[0];
    expect(mount, `a volume holding ${file}`).toBeDefined();
    const volume = (podSpec().volumes as Manifest[]).find((v) => v.name === mount!.name)!;
    return { volume, mount: mount!, inside: posix.relative(mount!.mountPath, file) };
  };
  /** The config the pods run: the ConfigMap's file, read by the real loader with the container's environment. */
  const config = (): Config => {
    const file = join(scratch, `${name}.yaml`);
    writeFileSync(file, one('ConfigMap', 'gatehouse-config').data['gatehouse.yaml']);
    return loadConfig({ file, env: containerEnv() });
  };
  return { manifests, one, deployment, podSpec, container, containerPort, secretValue, containerEnv, volumeHolding, config };
}

describe.each(OVERLAYS)('deploy/kubernetes/overlays/%s', (name) => {
  const o = overlay(name);

  it('mounts the config at the path GATEHOUSE_CONFIG names, and the environment it sets is one the loader reads', () => {
    const env = o.containerEnv();
    const { volume, inside } = o.volumeHolding(env.GATEHOUSE_CONFIG!);
    expect(o.one('ConfigMap', volume.configMap.name).data).toHaveProperty([inside]);
    const known = new Set(['GATEHOUSE_CONFIG', ...ENV_OVERRIDES.map((override) => override.env)]);
    for (const variable of Object.keys(env)) expect(known, variable).toContain(variable);
  });

  it("gives the config the service token and the seal secret from the operator's secret file, and nothing secret in the ConfigMap", () => {
    expect(o.config().requests.serviceToken).toBe(builds.secrets.get(name)!.GATEHOUSE_SERVICE_TOKEN);
    // The seal of the published keys has a secret of its own, so the service token can be rotated alone (docs/operations/rotations.md).
    expect(o.config().tokens.keySealSecret).toBe(builds.secrets.get(name)!.GATEHOUSE_KEY_SEAL_SECRET);
    expect(o.config().tokens.keySealSecret).not.toBe(o.config().requests.serviceToken);
    const file = parse(o.one('ConfigMap', 'gatehouse-config').data['gatehouse.yaml']) as Manifest;
    expect(file.requests?.serviceToken).toBeUndefined();
    expect(file.store?.url).toBeUndefined();
  });

  it('exposes the ports the config listens on, and probes /healthz and /readyz on the admin port', () => {
    const config = o.config();
    expect(o.containerPort('http')).toBe(config.server.port);
    expect(o.containerPort('admin')).toBe(config.admin.port);
    expect(config.admin.enabled).toBe(true);
    // The kubelet probes the pod IP: the admin listener must not be on loopback only.
    expect(config.admin.host).toBe('0.0.0.0');
    const { readinessProbe, livenessProbe, startupProbe } = o.container();
    expect(readinessProbe.httpGet).toStrictEqual({ path: READINESS_PATH, port: 'admin' });
    expect(livenessProbe.httpGet).toStrictEqual({ path: LIVENESS_PATH, port: 'admin' });
    expect(startupProbe.httpGet).toStrictEqual({ path: LIVENESS_PATH, port: 'admin' });
  });

  it("passes check-config --production with the values of its Secret (the pod's folders moved under a scratch folder)", async () => {
    const root = join(scratch, `${name}-pod`);
    const moved = o.one('ConfigMap', 'gatehouse-config').data['gatehouse.yaml'].replaceAll(/(?<= )\/(etc|var)\//g, `${root}/$1/`) as string;
    for (const folder of ['etc/gatehouse', 'etc/gatehouse-users', 'var/lib/gatehouse']) mkdirSync(join(root, folder), { recursive: true });
    const file = join(root, 'etc/gatehouse/gatehouse.yaml');
    writeFileSync(file, moved);
    const { GATEHOUSE_CONFIG: _mountedAt, ...env } = o.containerEnv();
    const checked = await runGatehouse(['--config', file, 'check-config', '--production'], env);
    expect(checked.stderr).toBe('');
    expect(checked.code).toBe(0);
    expect(checked.stdout).toContain('configuration OK for production');
  });

  it("runs this version's image", () => {
    const { version } = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string };
    expect(o.container().image).toBe(`gatehouse:${version}`);
  });

  it('lets the drain finish: the termination grace is above the preStop pause plus server.shutdownGraceS', () => {
    const command = o.container().lifecycle.preStop.exec.command as string[];
    expect(command[0]).toBe('sleep');
    expect(o.podSpec().terminationGracePeriodSeconds).toBeGreaterThan(Number(command[1]) + o.config().server.shutdownGraceS);
  });

  it("keeps each pod's keys file and journal on a writable volume of its own, the users in Redis, their seed in an optional Secret", () => {
    const config = o.config();
    for (const file of [config.tokens.keysFile!, join(config.requests.journalDir, 'x')]) {
      const { volume, mount } = o.volumeHolding(file);
      expect(volume.emptyDir, file).toBeDefined();
      expect(mount.readOnly ?? false).toBe(false);
    }
    const identity = config.identity;
    // A `users disable` in one pod reaches every pod at once only when the users are in the store.
    expect(identity.provider === 'local' && identity.usersIn).toBe('store');
    const { volume, mount, inside } = o.volumeHolding(identity.provider === 'local' ? identity.usersFile : '');
    expect(mount.readOnly).toBe(true);
    // Made by the operator when there are users to seed (docs/operations/kubernetes.md), never shipped.
    expect(volume.secret).toStrictEqual({ secretName: 'gatehouse-users', optional: true });
    expect(inside).toBe('users.yaml');
  });

  it('puts the public port on the Service, never the admin port, and the rolling update brings a new pod in before an old one goes', () => {
    const service = o.one('Service', 'gatehouse');
    expect((service.spec.ports as Manifest[]).map((p) => p.targetPort)).toStrictEqual(['http']);
    expect(service.spec.selector).toStrictEqual(o.deployment().spec.template.metadata.labels);
    expect(o.deployment().spec.selector.matchLabels).toStrictEqual(o.deployment().spec.template.metadata.labels);
    expect(o.deployment().spec.strategy.rollingUpdate).toStrictEqual({ maxSurge: 1, maxUnavailable: 0 });
  });

  it('routes the Ingress to the Service, with TLS for the host tokens.issuer names over https', () => {
    const ingress = o.one('Ingress', 'gatehouse');
    const service = o.one('Service', 'gatehouse');
    const issuer = new URL(o.config().tokens.issuer!);
    expect(issuer.protocol).toBe('https:');
    expect(issuer.port).toBe('');
    expect(ingress.spec.rules).toHaveLength(1);
    const rule = ingress.spec.rules[0];
    expect(rule.host).toBe(issuer.hostname);
    expect(ingress.spec.tls).toStrictEqual([{ hosts: [issuer.hostname], secretName: 'gatehouse-tls' }]);
    expect(rule.http.paths).toStrictEqual([{ path: '/', pathType: 'Prefix', backend: { service: { name: service.metadata.name, port: { name: 'http' } } } }]);
    expect((service.spec.ports as Manifest[]).map((p) => p.name)).toContain('http');
  });

  it("reads the client's address and the https URL from the ingress controller's headers, and from no one else", () => {
    const config = o.config();
    expect(config.server.trustedProxies.length).toBeGreaterThan(0);
    const clientAddress = compileClientAddress(config.server.trustedProxies);
    const issuer = new URL(config.tokens.issuer!);
    // What the ingress controller sends: the client after whatever the client claimed, and the scheme and host it was reached by.
    const headers = {
      host: 'gatehouse.default.svc',
      'x-forwarded-for': '198.51.100.1, 203.0.113.9',
      'x-forwarded-proto': 'https',
      'x-forwarded-host': issuer.host,
    };
    // A controller pod on the usual pod networks (flannel, Calico, Docker's bridge, an IPv6 ULA).
    for (const controller of ['10.244.1.7', '192.168.3.4', '172.17.0.5', 'fd00:10:244::7']) {
      const request = { socket: { remoteAddress: controller }, headers, url: '/orders/1?x=1' };
      expect(clientAddress.of(request), controller).toBe('203.0.113.9');
      // The URL a DPoP proof's htu names: the client signed https://<issuer host>/…, never http://.
      expect(requestUrl(request as never, clientAddress), controller).toBe(`${issuer.origin}/orders/1`);
    }
    // A client reaching a pod directly claims nothing.
    const direct = { socket: { remoteAddress: '203.0.113.50' }, headers, url: '/orders/1' };
    expect(clientAddress.of(direct)).toBe('203.0.113.50');
    expect(requestUrl(direct as never, clientAddress)).toBe('http://gatehouse.default.svc/orders/1');
  });
});

describe('deploy/kubernetes/overlays/small', () => {
  const o = overlay('small');

  it('runs one gateway pod on the in-cluster Redis, with the password both read from the one Secret', () => {
    expect(o.deployment().spec.replicas).toBe(1);
    const url = parseStoreUrl(o.config().store.url!);
    expect(url.mode).toBe('standalone');
    const { hostname, port, password } = new URL(url.mode === 'standalone' ? url.url : '');
    const service = o.one('Service', hostname);
    expect(service.spec.ports.map((p: Manifest) => p.port)).toContain(Number(port));
    const redis = o.one('StatefulSet', 'gatehouse-redis');
    expect(redis.spec.replicas).toBe(1);
    expect(service.spec.selector).toStrictEqual(redis.spec.template.metadata.labels);
    const redisContainer = redis.spec.template.spec.containers[0];
    const passwordRef = redisContainer.env.find((e: Manifest) => e.name === 'REDIS_PASSWORD').valueFrom.secretKeyRef;
    expect(o.secretValue(passwordRef.name, passwordRef.key)).toBe(decodeURIComponent(password));
    expect(redisContainer.args).toStrictEqual(['redis-server', '/etc/redis/redis.conf', '--requirepass', '$(REDIS_PASSWORD)']);
  });

  it('keeps Redis from evicting and persists it on a volume claim, reachable from the gateway pods only', () => {
    const redis = o.one('StatefulSet', 'gatehouse-redis');
    const conf = o.one('ConfigMap', 'gatehouse-redis').data['redis.conf'] as string;
    const settings = new Map(
      conf
        .split('\n')
        .filter((l) => l.trim() !== '' && !l.trim().startsWith('#'))
        .map((l) => l.trim().split(/\s+/) as [string, string]),
    );
    expect(settings.get('maxmemory-policy')).toBe('noeviction');
    expect(settings.get('appendonly')).toBe('yes');
    const dataMount = redis.spec.template.spec.containers[0].volumeMounts.find((m: Manifest) => m.mountPath === settings.get('dir'));
    expect(redis.spec.volumeClaimTemplates.map((t: Manifest) => t.metadata.name)).toContain(dataMount.name);
    const policy = o.one('NetworkPolicy', 'gatehouse-redis');
    expect(policy.spec.podSelector.matchLabels).toStrictEqual(redis.spec.template.metadata.labels);
    expect(policy.spec.ingress).toStrictEqual([
      { from: [{ podSelector: { matchLabels: o.deployment().spec.template.metadata.labels } }], ports: [{ port: 'redis' }] },
    ]);
  });
});

describe('deploy/kubernetes/overlays/production', () => {
  const o = overlay('production');

  it("runs on Redis Sentinel with the operator's password, from the secret file", () => {
    const url = parseStoreUrl(o.config().store.url!);
    expect(url.mode).toBe('sentinel');
    expect(url.mode === 'sentinel' && url.sentinels.length).toBe(3);
    expect(url.mode === 'sentinel' && url.password).toBe(builds.productionRedisPassword);
  });

  it('leaves the replica count to the autoscaler, 3 up, and keeps a majority serving through disruptions', () => {
    // A replicas field would be set back by every apply, under the autoscaler's feet.
    expect(o.deployment().spec).not.toHaveProperty('replicas');
    const hpa = o.one('HorizontalPodAutoscaler');
    expect(hpa.spec.scaleTargetRef).toMatchObject({ kind: 'Deployment', name: o.deployment().metadata.name });
    expect(hpa.spec.minReplicas).toBe(3);
    expect(hpa.spec.metrics).toStrictEqual([{ type: 'Resource', resource: { name: 'cpu', target: { type: 'Utilization', averageUtilization: 70 } } }]);
    // The autoscaler needs a CPU request to compute utilisation against.
    expect(o.container().resources.requests.cpu).toBeDefined();
    const pdb = o.one('PodDisruptionBudget');
    expect(pdb.spec.selector.matchLabels).toStrictEqual(o.deployment().spec.template.metadata.labels);
    expect(pdb.spec.minAvailable).toBeLessThan(hpa.spec.minReplicas);
  });

  it('lets only the ingress controller reach the public port (its forwarded headers are believed), monitoring and reporters the admin port', () => {
    const policy = o.one('NetworkPolicy', 'gatehouse');
    expect(policy.spec.podSelector.matchLabels).toStrictEqual(o.deployment().spec.template.metadata.labels);
    expect(policy.spec.policyTypes).toContain('Ingress');
    const rules = policy.spec.ingress as Manifest[];
    const publicRules = rules.filter((rule) => rule.ports.some((p: Manifest) => p.port === 'http'));
    expect(publicRules).toStrictEqual([
      { from: [{ namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'ingress-nginx' } } }], ports: [{ port: 'http' }] },
    ]);
    const adminRules = rules.filter((rule) => rule !== publicRules[0]);
    expect(adminRules.map((rule) => rule.ports)).toStrictEqual([[{ port: 'admin' }]]);
    expect(adminRules[0]!.from.length).toBeGreaterThan(0);
  });
});
