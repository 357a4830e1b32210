// Every object `kubectl apply -k` would send, from the base, each overlay and
// each overlay with the monitoring component, as `kubectl kustomize` builds
// them, validates against the Kubernetes OpenAPI schemas (kubernetes-models,
// generated from Kubernetes 1.27's; the Prometheus Operator's CRD schemas for
// ServiceMonitor and PrometheusRule). An object of a kind without a schema
// here fails rather than passes unseen. Every workload runs hardened: probes,
// resources, a non-root user on a read-only root filesystem.
import { PrometheusRule, ServiceMonitor } from '@kubernetes-models/prometheus-operator/monitoring.coreos.com/v1';
import { Deployment, StatefulSet } from 'kubernetes-models/apps/v1';
import { HorizontalPodAutoscaler } from 'kubernetes-models/autoscaling/v2';
import { Ingress, NetworkPolicy } from 'kubernetes-models/networking.k8s.io/v1';
import { PodDisruptionBudget } from 'kubernetes-models/policy/v1';
import { ConfigMap, Secret, Service } from 'kubernetes-models/v1';
import { readFileSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { METRICS_PATH } from '../../src/http/gateway-paths.js';
import { buildAll, DEPLOY, OVERLAYS, ROOT, shippedFiles, TARGETS, type Builds, type Manifest } from './kustomize-build.js';

/** A schema-checked model per `apiVersion/kind` the manifests may hold. */
const MODELS: ReadonlyMap<string, new (data: never) => { validate(): void }> = new Map(
  [
    ConfigMap,
    Secret,
    Service,
    Deployment,
    StatefulSet,
    HorizontalPodAutoscaler,
    Ingress,
    NetworkPolicy,
    PodDisruptionBudget,
    ServiceMonitor,
    PrometheusRule,
  ].map((model) => [`${model.apiVersion}/${model.kind}`, model as unknown as new (data: never) => { validate(): void }]),
);

/** Throws the schema's complaints about one object, or that no schema here knows its kind. */
function validate(object: Manifest): void {
  const Model = MODELS.get(`${object.apiVersion}/${object.kind}`);
  if (Model === undefined) throw new Error(`no schema here for ${object.apiVersion} ${object.kind}: add its model to MODELS`);
  new Model(object as never).validate();
}

let builds: Builds;

beforeAll(() => {
  builds = buildAll();
}, 60_000);

afterAll(() => builds?.remove());

const workloads = (manifests: Manifest[]): Manifest[] => manifests.filter((m) => m.kind === 'Deployment' || m.kind === 'StatefulSet');

describe.each(TARGETS)('deploy/kubernetes %s, as kustomize builds it', (target) => {
  const manifests = (): Manifest[] => builds.manifests.get(target)!;

  it('validates every object against its OpenAPI schema', () => {
    expect(manifests().length).toBeGreaterThan(0);
    for (const object of manifests()) expect(() => validate(object), `${object.kind} ${object.metadata?.name}`).not.toThrow();
  });

  it('runs every workload with probes, resources, and as a non-root user on a read-only root filesystem', () => {
    expect(workloads(manifests()).length).toBeGreaterThan(0);
    for (const workload of workloads(manifests())) {
      const pod = workload.spec.template.spec;
      for (const container of pod.containers as Manifest[]) {
        const what = `${workload.kind} ${workload.metadata.name}: ${container.name}`;
        expect(container.readinessProbe, what).toBeDefined();
        expect(container.livenessProbe, what).toBeDefined();
        expect(container.resources?.requests?.cpu, what).toBeDefined();
        expect(container.resources?.requests?.memory, what).toBeDefined();
        expect(container.resources?.limits?.memory, what).toBeDefined();
        expect(container.securityContext?.runAsNonRoot ?? pod.securityContext?.runAsNonRoot, what).toBe(true);
        expect(container.securityContext?.runAsUser ?? pod.securityContext?.runAsUser, what).toBeGreaterThan(0);
        expect(container.securityContext?.readOnlyRootFilesystem, what).toBe(true);
        expect(container.securityContext?.allowPrivilegeEscalation, what).toBe(false);
        expect(container.securityContext?.capabilities?.drop, what).toStrictEqual(['ALL']);
      }
    }
  });
});

describe('deploy/kubernetes files', () => {
  it('lists every manifest of a kustomization folder in its resources, so none is left out of the build unseen', () => {
    const folders = new Map<string, string[]>();
    for (const file of shippedFiles().filter((f) => f.endsWith('.yaml') && !f.includes('/secrets/'))) {
      folders.set(dirname(file), [...(folders.get(dirname(file)) ?? []), basename(file)]);
    }
    expect([...folders.keys()].sort()).toStrictEqual(['base', 'components/monitoring', 'overlays/production', 'overlays/small']);
    for (const [folder, files] of folders) {
      const kustomization = parse(readFileSync(join(ROOT, DEPLOY, folder, 'kustomization.yaml'), 'utf8')) as Manifest;
      const listed = (kustomization.resources as string[]).filter((r) => r.endsWith('.yaml'));
      expect(listed.sort(), folder).toStrictEqual(files.filter((f) => f !== 'kustomization.yaml').sort());
    }
  });
});

describe('the schema check', () => {
  it('refuses an object the API server would refuse, and a kind it has no schema for', () => {
    const deployment = structuredClone(builds.manifests.get('small')!.find((m) => m.kind === 'Deployment')!);
    deployment.spec.template.spec.containers[0].ports[0].containerPort = 'http';
    expect(() => validate(deployment)).toThrow(/containerPort must be integer/);
    const ingress = structuredClone(builds.manifests.get('small')!.find((m) => m.kind === 'Ingress')!);
    delete ingress.spec.rules[0].http.paths[0].pathType;
    expect(() => validate(ingress)).toThrow(/pathType/);
    expect(() => validate({ apiVersion: 'example.com/v1', kind: 'Widget', metadata: { name: 'x' } })).toThrow(/no schema here for example.com\/v1 Widget/);
  });
});

describe.each(OVERLAYS)('deploy/kubernetes/components/monitoring on overlays/%s', (overlay) => {
  const manifests = (): Manifest[] => builds.manifests.get(`${overlay}+monitoring`)!;
  const deployment = (): Manifest => manifests().find((m) => m.kind === 'Deployment' && m.metadata.name === 'gatehouse')!;

  it("annotates the gateway's pods for scraping /metrics on the admin port", () => {
    const adminPort = deployment().spec.template.spec.containers[0].ports.find((p: Manifest) => p.name === 'admin').containerPort;
    expect(deployment().spec.template.metadata.annotations).toStrictEqual({
      'prometheus.io/scrape': 'true',
      'prometheus.io/port': String(adminPort),
      'prometheus.io/path': METRICS_PATH,
    });
    // Without the component, nothing is annotated.
    const plain = builds.manifests.get(overlay)!.find((m) => m.kind === 'Deployment')!;
    expect(plain.spec.template.metadata.annotations).toBeUndefined();
  });

  it('has a ServiceMonitor scrape /metrics through a Service of the admin port, apart from the public Service', () => {
    const monitors = manifests().filter((m) => m.kind === 'ServiceMonitor');
    expect(monitors).toHaveLength(1);
    const monitor = monitors[0]!;
    const selected = manifests().filter(
      (m) => m.kind === 'Service' && Object.entries(monitor.spec.selector.matchLabels).every(([k, v]) => m.metadata.labels?.[k] === v),
    );
    expect(selected.map((s) => s.metadata.name)).toStrictEqual(['gatehouse-metrics']);
    const service = selected[0]!;
    expect(service.spec.selector).toStrictEqual(deployment().spec.template.metadata.labels);
    const endpoint = monitor.spec.endpoints[0];
    expect(endpoint.path).toBe(METRICS_PATH);
    expect(service.spec.ports.find((p: Manifest) => p.name === endpoint.port).targetPort).toBe('admin');
    const publicService = manifests().find((m) => m.kind === 'Service' && m.metadata.name === 'gatehouse')!;
    expect(publicService.spec.ports.map((p: Manifest) => p.targetPort)).toStrictEqual(['http']);
  });
});
