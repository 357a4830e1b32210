// Builds gatehouse:local from the Dockerfile. `--format docker` keeps the
// HEALTHCHECK (the OCI format has no field for it). The npm registry this
// machine uses, and the CA that verifies it, reach the build's `npm ci` as
// build secrets, mounted for that step only and never stored in a layer:
// a generated npmrc naming just the registry, and the CA bundle npm is
// configured with (npm's cafile, else NODE_EXTRA_CA_CERTS, else the system's).
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { command, podman } from './podman.js';

export const IMAGE = 'gatehouse:local';

async function npmConfig(key: string): Promise<string | undefined> {
  const value = (await command('npm', ['config', 'get', key], { allowFailure: true })).stdout.trim();
  return value === '' || value === 'null' || value === 'undefined' ? undefined : value;
}

async function caBundle(): Promise<string | undefined> {
  const candidates = [await npmConfig('cafile'), process.env.NODE_EXTRA_CA_CERTS, '/etc/ssl/certs/ca-certificates.crt'];
  return candidates.find((file): file is string => file !== undefined && existsSync(file));
}

export async function buildImage(root: string): Promise<void> {
  const secrets = mkdtempSync(join(tmpdir(), 'gatehouse-build-'));
  try {
    const registry = (await npmConfig('registry')) ?? 'https://registry.npmjs.org/';
    const npmrc = join(secrets, 'npmrc');
    writeFileSync(npmrc, `registry=${registry}\n`, { mode: 0o600 });
    const args = ['build', '--format', 'docker', '--tag', IMAGE, '--secret', `id=npmrc,src=${npmrc}`];
    const ca = await caBundle();
    if (ca !== undefined) args.push('--secret', `id=npm_ca,src=${ca}`);
    await podman([...args, root], { stream: true });
  } finally {
    rmSync(secrets, { recursive: true, force: true });
  }
}
