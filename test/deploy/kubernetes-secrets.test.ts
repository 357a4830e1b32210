// What `kubectl apply -k` applies never holds a placeholder Secret that
// would overwrite the operator's real one (the old manifests shipped
// `GATEHOUSE_SERVICE_TOKEN: replace-me-with-at-least-32-random-characters`,
// long enough to pass). The repository ships no Secret at all; each overlay
// generates gatehouse-secrets from the operator's own file, made by the
// command its comment and docs/operations/kubernetes.md give, which git
// ignores; without that file the build fails; every other Secret a manifest
// names is the operator's, and the documentation says how to make it.
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import {
  build,
  buildAll,
  copyDeploy,
  DEPLOY,
  OVERLAYS,
  ROOT,
  secretCommand,
  secretFile,
  shippedFiles,
  TARGETS,
  type Builds,
  type Manifest,
} from './kustomize-build.js';

const DOCS = 'docs/operations/kubernetes.md';
/** Secrets the manifests name but the operator makes (a TLS certificate, the users seed). */
const OPERATOR_MADE = ['gatehouse-tls', 'gatehouse-users'];
/** Words and shapes that mark a value someone was meant to replace. */
const PLACEHOLDER = /replace|change.?me|example|placeholder|dummy|secret|passw(?:or)?d|insecure|<|>|…|\.\.\.|(.)\1{5}/i;

/** Why a secret value looks like a placeholder, or undefined when it looks random enough. */
function placeholderReason(value: string): string | undefined {
  if (value.length < 32) return `only ${value.length} characters`;
  const word = PLACEHOLDER.exec(value)?.[0];
  if (word !== undefined) return `holds "${word}"`;
  if (new Set(value).size < 12) return `only ${new Set(value).size} distinct characters`;
  return undefined;
}

/** A value as it is judged: a URL by its password, anything else whole. */
function secretPart(value: string): string {
  const password = /^[a-z][a-z-]*:\/\/[^:@/]*:([^@/]*)@/i.exec(value)?.[1];
  return password === undefined ? value : decodeURIComponent(password);
}

/** Every Secret name a manifest refers to: env and volume references, Ingress TLS. */
function referencedSecrets(manifests: Manifest[]): Set<string> {
  const names = new Set<string>();
  const walk = (value: unknown, key?: string): void => {
    if (Array.isArray(value)) value.forEach((item) => walk(item));
    else if (value !== null && typeof value === 'object') {
      for (const [k, v] of Object.entries(value)) {
        if (key === 'secretKeyRef' && k === 'name') names.add(String(v));
        else if (k === 'secretName' && typeof v === 'string') names.add(v);
        else walk(v, k);
      }
    }
  };
  walk(manifests);
  return names;
}

let builds: Builds;

beforeAll(() => {
  builds = buildAll();
}, 60_000);

afterAll(() => builds?.remove());

describe('deploy/kubernetes secrets', () => {
  it('ships no Secret object in any manifest', () => {
    const yamlFiles = shippedFiles().filter((file) => file.endsWith('.yaml'));
    expect(yamlFiles.length).toBeGreaterThan(0);
    for (const file of yamlFiles) {
      for (const doc of parseAllDocuments(readFileSync(join(ROOT, DEPLOY, file), 'utf8'))) {
        expect((doc.toJS() as Manifest | null)?.kind, file).not.toBe('Secret');
      }
    }
  });

  it.each(TARGETS)('%s: emits no Secret but the ones generated from the operator’s file, and none with a placeholder-looking value', (target) => {
    const overlay = target === 'base' ? undefined : OVERLAYS.find((o) => target.startsWith(o))!;
    const secrets = builds.manifests.get(target)!.filter((m) => m.kind === 'Secret');
    expect(secrets.map((s) => s.metadata.name.replace(/-[a-z0-9]{10}$/, ''))).toStrictEqual(overlay === undefined ? [] : ['gatehouse-secrets']);
    for (const secret of secrets) {
      expect(secret.stringData, secret.metadata.name).toBeUndefined();
      const values = Object.fromEntries(Object.entries(secret.data as Record<string, string>).map(([k, v]) => [k, Buffer.from(v, 'base64').toString('utf8')]));
      // Exactly the operator's file: nothing the repository wrote stands in for a missing entry.
      expect(values).toStrictEqual(builds.secrets.get(overlay!));
      for (const [key, value] of Object.entries(values)) expect(placeholderReason(secretPart(value)), key).toBeUndefined();
    }
  });

  it('judges the old shipped placeholders, a repeated character and short values as placeholders', () => {
    expect(placeholderReason('replace-me-with-at-least-32-random-characters')).toMatch(/replace/);
    expect(placeholderReason('a'.repeat(48))).toBeDefined();
    expect(placeholderReason('changeme')).toBeDefined();
    expect(placeholderReason(secretPart('redis-sentinel://:<password>@s-0:26379,s-1:26379/mymaster'))).toBeDefined();
    expect(placeholderReason(secretPart(builds.secrets.get('production')!.REDIS_URL!))).toBeUndefined();
  });

  it('names only Secrets it generates or that the documentation tells the operator how to make', () => {
    const docs = readFileSync(join(ROOT, DOCS), 'utf8');
    // The base is never applied alone: the overlays generate the Secret it names.
    for (const target of TARGETS.filter((t) => t !== 'base')) {
      const emitted = new Set(
        builds.manifests
          .get(target)!
          .filter((m) => m.kind === 'Secret')
          .map((m) => m.metadata.name as string),
      );
      for (const name of referencedSecrets(builds.manifests.get(target)!)) {
        if (emitted.has(name)) continue;
        expect(OPERATOR_MADE, `${target}: ${name}`).toContain(name);
        expect(docs, `${DOCS} on ${name}`).toMatch(new RegExp(`kubectl create secret \\w+ ${name} `));
      }
    }
  });

  it.each(OVERLAYS)('%s: refuses to build without the operator’s secret file, naming it', (overlay) => {
    const root = copyDeploy();
    try {
      expect(() => build(root, `overlays/${overlay}`)).toThrow(/secrets\/gatehouse\.env/);
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });

  it.each(OVERLAYS)('%s: keeps the secret file out of git, and documents the command that makes it', (overlay) => {
    // Exit 0: ignored (check-ignore exits 1 for a path git would track).
    expect(() => execFileSync('git', ['check-ignore', '-q', secretFile(overlay)], { cwd: ROOT })).not.toThrow();
    expect(() => execFileSync('git', ['check-ignore', '-q', `${DEPLOY}/overlays/${overlay}/secrets/.gitignore`], { cwd: ROOT })).toThrow();
    // Word for word, whatever the indentation (the page has it in a list item or not).
    const unindented = (text: string): string => text.replace(/^[ \t]+/gm, '');
    expect(unindented(readFileSync(join(ROOT, DOCS), 'utf8'))).toContain(unindented(secretCommand(overlay)));
  });

  it('production: the command refuses to write a file without the Redis password', () => {
    const root = copyDeploy();
    try {
      const env = { ...process.env, REDIS_PASSWORD: '' };
      expect(() => execFileSync('bash', ['-c', secretCommand('production')], { cwd: root, env, stdio: 'pipe' })).toThrow(/your Redis password/);
      expect(existsSync(join(root, secretFile('production')))).toBe(false);
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });
});
