// The Kubernetes manifests as `kubectl apply -k` would apply them: every
// kustomization under deploy/kubernetes built with `kubectl kustomize`, in a
// copy of the folder whose secret files were made by the very commands the
// overlays' comments (and docs/operations/kubernetes.md) tell the operator to
// run. Nothing here writes inside the repository, so an operator's own secret
// files are never read or overwritten. Without kubectl, or with one whose
// kustomize is older than v4 (Debian 12's kubernetes-client 1.20 carries
// v2.0.3, which reads neither `envs` nor `components`), it throws a message
// saying what to install.
import { execFileSync } from 'node:child_process';
import { cpSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseAllDocuments } from 'yaml';

export const ROOT = fileURLToPath(new URL('../..', import.meta.url));
export const DEPLOY = 'deploy/kubernetes';
export const OVERLAYS = ['small', 'production'] as const;
export type Overlay = (typeof OVERLAYS)[number];
/** The component an overlay enables by uncommenting these two lines of its kustomization. */
export const MONITORING_LINES = '# components:\n#   - ../../components/monitoring\n';
/** Where an overlay's secret file lives, from the repository's root. */
export const secretFile = (overlay: Overlay): string => `${DEPLOY}/overlays/${overlay}/secrets/gatehouse.env`;

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- manifests are untyped YAML; each read is checked by an expectation
export type Manifest = Record<string, any>;

/** What is built: the base, each overlay, and each overlay with the monitoring component. */
export type Target = 'base' | Overlay | `${Overlay}+monitoring`;
export const TARGETS: readonly Target[] = ['base', ...OVERLAYS, ...OVERLAYS.map((o) => `${o}+monitoring` as const)];

const MIN_KUSTOMIZE_MAJOR = 4;
const INSTALL_HINT =
  'install kubectl 1.21 or later (kustomize v4+; e.g. the kubectl package of the Kubernetes apt repository), or set KUBECTL to one. ' +
  "Debian 12's kubernetes-client (kubectl 1.20, kustomize v2.0.3) is too old: it reads neither `envs` nor `components`.";

export const kubectl = (): string => process.env.KUBECTL ?? 'kubectl';

/** Throws, saying what to install, unless kubectl runs and embeds kustomize v4 or later. */
export function requireKustomize(): void {
  let version: { kustomizeVersion?: string; clientVersion?: { gitVersion?: string } };
  try {
    version = JSON.parse(execFileSync(kubectl(), ['version', '--client', '-o', 'json'], { encoding: 'utf8' })) as typeof version;
  } catch (error) {
    throw new Error(
      `the Kubernetes manifest tests build with \`${kubectl()} kustomize\`, which did not run (${(error as Error).message.split('\n')[0]}): ${INSTALL_HINT}`,
    );
  }
  const major = Number(/^v(\d+)\./.exec(version.kustomizeVersion ?? '')?.[1] ?? 0);
  if (major < MIN_KUSTOMIZE_MAJOR) {
    // kubectl before 1.21 does not report its kustomize (v2.0.3).
    const kustomize = version.kustomizeVersion ?? 'older than v4';
    throw new Error(`${kubectl()} is kubectl ${version.clientVersion?.gitVersion ?? '(unknown)'}, kustomize ${kustomize}: ${INSTALL_HINT}`);
  }
}

/** The indented comment lines just before an overlay's `kubectl apply -k` line, uncommented: the operator's command. */
export function secretCommand(overlay: Overlay): string {
  const lines = readFileSync(join(ROOT, DEPLOY, 'overlays', overlay, 'kustomization.yaml'), 'utf8').split('\n');
  const apply = lines.findIndex((line) => line.startsWith('#   kubectl apply -k'));
  let first = apply;
  while (first > 0 && lines[first - 1]!.startsWith('#   ')) first--;
  if (apply === -1 || first === apply) throw new Error(`${overlay}/kustomization.yaml: no secret file command before its kubectl apply line`);
  return lines
    .slice(first, apply)
    .map((line) => line.slice(4))
    .join('\n');
}

/** KEY=VALUE lines, as kustomize's `envs` reads them. */
export function readEnvFile(path: string): Record<string, string> {
  const entries: Record<string, string> = {};
  for (const line of readFileSync(path, 'utf8').split('\n')) {
    if (line.trim() === '' || line.startsWith('#')) continue;
    const at = line.indexOf('=');
    entries[line.slice(0, at)] = line.slice(at + 1);
  }
  return entries;
}

export interface Builds {
  /** The copy's root: a repository root holding only deploy/kubernetes. */
  root: string;
  manifests: ReadonlyMap<Target, Manifest[]>;
  /** Each overlay's secret file as its command made it. */
  secrets: ReadonlyMap<Overlay, Record<string, string>>;
  /** The Redis password the production command was given, as an operator exports it. */
  productionRedisPassword: string;
  remove: () => void;
}

/** Runs kustomize on a folder of the copy; its error (stderr) is the thrown message. */
export function build(root: string, folder: string): Manifest[] {
  let output: string;
  try {
    output = execFileSync(kubectl(), ['kustomize', join(root, DEPLOY, folder)], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
  } catch (error) {
    throw new Error(`kubectl kustomize ${folder}: ${String((error as { stderr?: string }).stderr ?? error).trim()}`);
  }
  return parseAllDocuments(output).map((doc) => {
    if (doc.errors.length > 0) throw new Error(`kubectl kustomize ${folder}: ${doc.errors[0]!.message}`);
    const object = doc.toJS() as Manifest;
    // kustomize wraps a generated Secret's base64 at 76 characters; the API server's decoder skips the
    // line breaks, and what it stores is the unbroken string the schema's `byte` format describes.
    if (object.kind === 'Secret' && object.data !== undefined) {
      for (const key of Object.keys(object.data)) object.data[key] = String(object.data[key]).replace(/\n/g, '');
    }
    return object;
  });
}

/** A copy of deploy/kubernetes without any secret file an operator left in the checkout. */
export function copyDeploy(): string {
  const root = mkdtempSync(join(tmpdir(), 'gatehouse-kustomize-'));
  const source = join(ROOT, DEPLOY);
  cpSync(source, join(root, DEPLOY), {
    recursive: true,
    filter: (path) => !/\/secrets\/[^/]+$/.test(path) || path.endsWith('/.gitignore') || statSync(path).isDirectory(),
  });
  return root;
}

/** Every file under the manifests' folder, relative to it: what the repository ships. */
export function shippedFiles(): string[] {
  const walk = (folder: string): string[] =>
    readdirSync(folder, { withFileTypes: true }).flatMap((entry) =>
      entry.isDirectory() ? walk(join(folder, entry.name)) : [relative(join(ROOT, DEPLOY), join(folder, entry.name))],
    );
  return walk(join(ROOT, DEPLOY)).sort();
}

export function buildAll(): Builds {
  requireKustomize();
  const root = copyDeploy();
  const remove = (): void => rmSync(root, { recursive: true, force: true });
  try {
    return { root, ...buildIn(root), remove };
  } catch (error) {
    remove();
    throw error;
  }
}

function buildIn(root: string): Pick<Builds, 'manifests' | 'secrets' | 'productionRedisPassword'> {
  const productionRedisPassword = execFileSync('openssl', ['rand', '-hex', '24'], { encoding: 'utf8' }).trim();
  const secrets = new Map<Overlay, Record<string, string>>();
  for (const overlay of OVERLAYS) {
    execFileSync('bash', ['-eu', '-o', 'pipefail', '-c', secretCommand(overlay)], {
      cwd: root,
      env: { ...process.env, REDIS_PASSWORD: productionRedisPassword },
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    secrets.set(overlay, readEnvFile(join(root, secretFile(overlay))));
  }
  const manifests = new Map<Target, Manifest[]>([['base', build(root, 'base')]]);
  for (const overlay of OVERLAYS) manifests.set(overlay, build(root, `overlays/${overlay}`));
  // Monitoring enabled as an operator does it: the overlay's two commented lines uncommented.
  for (const overlay of OVERLAYS) {
    const file = join(root, DEPLOY, 'overlays', overlay, 'kustomization.yaml');
    const text = readFileSync(file, 'utf8');
    if (!text.includes(MONITORING_LINES)) throw new Error(`${overlay}/kustomization.yaml lacks the commented monitoring component lines`);
    writeFileSync(file, text.replace(MONITORING_LINES, 'components:\n  - ../../components/monitoring\n'));
    manifests.set(`${overlay}+monitoring`, build(root, `overlays/${overlay}`));
    writeFileSync(file, text);
  }
  return { manifests, secrets, productionRedisPassword };
}
