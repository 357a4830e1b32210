// `npm run test:container`: the image built from the Dockerfile and the compose
// file run in a real engine (podman), used the way an operator uses them:
// a user added through the volume, a login, a proxied call, a 202 whose outcome
// the backend reports on the internal status API and the client reads, a logout;
// the image's HEALTHCHECK; a Redis outage that leaves it serving, degraded (a
// shared fault must not take every instance out); a non-root gateway on a read-only root filesystem;
// a restart that keeps users and keys; SIGTERM ending it within the grace.
// Every step prints a progress line; any failure exits 1 after the gateway's
// last log lines. The project's containers, volumes and network are removed
// at the end, on failure and on Ctrl-C. Run scripts/container-prerequisites.sh
// first (the npm script does); base images: scripts/container-base-images.sh.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parse } from 'yaml';
import { ComposeProject } from './compose-project.js';
import { buildImage, IMAGE } from './image.js';
import { command, podman, progress, redact, waitFor } from './podman.js';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
process.chdir(root);
process.env.CONTAINERS_CONF ??= resolve(root, 'test/container/containers.conf');

const project = await ComposeProject.create(root);
const gatehouse = project.container('gatehouse');
const username = 'operator';
const password = randomBytes(18).toString('base64url');
redact(project.serviceToken);
redact(password);

/** A client call to the public listener. Like a well-behaved client it honours 503 + Retry-After (a gateway
 * just started on a busy machine sheds work without a known credential while its event loop is late). */
async function call(method: string, path: string, options: { token?: string; json?: unknown; retry?: boolean } = {}) {
  const headers: Record<string, string> = {};
  if (options.token) headers.authorization = `Bearer ${options.token}`;
  if (options.json !== undefined) headers['content-type'] = 'application/json';
  for (let attempt = 1; ; attempt += 1) {
    const response = await fetch(`${project.publicUrl}${path}`, {
      method,
      headers,
      body: options.json === undefined ? undefined : JSON.stringify(options.json),
    });
    const text = await response.text();
    const retryAfter = Number(response.headers.get('retry-after'));
    if (response.status === 503 && retryAfter > 0 && attempt < 20 && options.retry !== false) {
      progress(`    ${method} ${path.replace(/\?.*/, '')}: 503, retrying after ${retryAfter} s as asked`);
      await new Promise((resolve) => setTimeout(resolve, retryAfter * 1000));
      continue;
    }
    return { status: response.status, headers: response.headers, body: text === '' ? undefined : (JSON.parse(text) as Record<string, unknown>) };
  }
}

async function login(): Promise<{ access: string; refresh: string }> {
  const { status, body } = await call('POST', '/api/v1/auth/login', { json: { username, password } });
  assert.equal(status, 200, `login answered ${status}: ${JSON.stringify(body)}`);
  return { access: String(body?.access_token), refresh: String(body?.refresh_token) };
}

async function ready(): Promise<void> {
  await waitFor('the gateway to be ready (admin /readyz)', 90_000, async () => {
    const response = await fetch(`${project.adminUrl}/readyz`);
    return response.ok ? true : undefined;
  });
}

async function publicKeyIds(): Promise<string[]> {
  const { body } = await call('GET', '/.well-known/jwks.json');
  return ((body?.keys ?? []) as { kid: string }[]).map((key) => key.kid).sort();
}

async function steps(): Promise<void> {
  progress('1/9 base images (node, redis): present, pulled, or stand-ins built');
  await command('bash', ['scripts/container-base-images.sh'], { stream: true });

  progress(`2/9 building ${IMAGE} from the Dockerfile`);
  await buildImage(root);

  progress(`3/9 compose project ${project.name}: user "${username}" added through the volume (run --rm … users add)`);
  await project.compose(['run', '--rm', '-T', '--no-deps', 'gatehouse', 'users', 'add', username, '--password-stdin'], {
    input: `${password}\n`,
    stream: true,
  });

  progress(`4/9 compose up: Gatehouse on :${project.publicPort} (admin 127.0.0.1:${project.adminPort}), Redis, the demo backend`);
  await project.compose(['up', '-d'], { stream: true });
  await ready();

  progress('5/9 login, a proxied call, a 202 reported by the backend and read by the client, logout');
  const first = await login();
  const proxied = await call('GET', '/demo/hello', { token: first.access });
  assert.equal(proxied.status, 200);
  assert.equal(proxied.body?.path, '/hello');
  assert.equal((proxied.body?.identity as Record<string, string>)['x-gatehouse-username'], username);

  const accepted = await call('POST', '/demo/jobs', { token: first.access });
  assert.equal(accepted.status, 202);
  const requestId = String(accepted.body?.requestId);
  assert.match(accepted.headers.get('location') ?? '', new RegExp(`/requests/${requestId}/status$`));
  const outcome = await waitFor('the backend to report the job completed', 60_000, async () => {
    const poll = await call('GET', `/api/v1/requests/${requestId}/status?wait=10`, { token: first.access });
    assert.equal(poll.status, 200);
    return poll.body?.status === 'pending' ? undefined : poll.body?.status;
  });
  assert.equal(outcome, 'completed');

  assert.equal((await call('POST', '/api/v1/auth/logout', { token: first.access })).status, 204);
  assert.equal((await call('POST', '/api/v1/auth/refresh', { json: { refresh_token: first.refresh } })).status, 400, 'a refresh after logout');

  progress("6/9 the image's HEALTHCHECK and the compose health check: healthy, degraded but healthy without Redis, failing when frozen");
  await checkHealth();

  progress('7/9 non-root user, read-only root filesystem');
  const uid = (await podman(['exec', gatehouse, 'id', '-u'])).stdout.trim();
  assert.notEqual(uid, '0', 'the gateway runs as root');
  const asRoot = await podman(['exec', '--user', '0', gatehouse, 'sh', '-c', 'echo x > /root-write-probe'], { allowFailure: true });
  assert.notEqual(asRoot.code, 0, 'a write to / succeeded');
  assert.match(asRoot.stderr, /read-only file system/i);
  await podman(['exec', gatehouse, 'sh', '-c', 'test -w /var/lib/gatehouse && test -s /var/lib/gatehouse/keys.json']);

  progress('8/9 restart: users and signing keys kept on the volume, sessions and 202 records in Redis');
  const second = await login();
  const keysBefore = await publicKeyIds();
  await podman(['restart', '--time', '35', gatehouse]);
  await ready();
  assert.deepEqual(await publicKeyIds(), keysBefore, 'the signing keys changed across the restart');
  const refreshed = await call('POST', '/api/v1/auth/refresh', { json: { refresh_token: second.refresh } });
  assert.equal(refreshed.status, 200, 'a refresh token from before the restart');
  const afterRestart = await call('GET', `/api/v1/requests/${requestId}/status`, { token: String(refreshed.body?.access_token) });
  assert.equal(afterRestart.body?.status, 'completed');
  await login();

  progress('9/9 SIGTERM: the gateway drains and exits by itself within the grace');
  await checkGracefulStop();
}

async function checkHealth(): Promise<void> {
  const inspected = await podman(['image', 'inspect', IMAGE, '--format', '{{json .Config.Healthcheck}}']);
  const healthcheck = JSON.parse(inspected.stdout) as { Test?: string[] } | null;
  assert.equal(healthcheck?.Test?.[0], 'CMD', 'the image has no HEALTHCHECK (built without --format docker?)');
  // The image's own command, as the engine would run it in the container.
  await podman(['exec', gatehouse, ...healthcheck.Test.slice(1)]);
  // The compose file's health check (readiness), through the engine's runner.
  await healthy('with everything up');

  // A Redis outage is shared by every instance: the gateway stays in rotation, degraded — it says so, keeps
  // serving tokens it verified before and refuses what needs the store — instead of taking itself out.
  const { access } = await login();
  assert.equal((await call('GET', '/demo/hello', { token: access })).status, 200);
  progress('    Redis stopped: the gateway stays healthy, degraded');
  await podman(['stop', '--time', '10', project.container('redis')]);
  await waitFor('/readyz to report the store down (degraded)', 60_000, async () => {
    const response = await fetch(`${project.adminUrl}/readyz`);
    const body = (await response.json()) as { status?: string; checks?: { store?: { up?: boolean } } };
    if (body.status !== 'degraded') return undefined;
    assert.equal(response.status, 200, 'a degraded gateway answers 200: it still serves');
    assert.equal(body.checks?.store?.up, false);
    return true;
  });
  await healthy('with Redis stopped (degraded)');
  assert.equal((await call('GET', '/demo/hello', { token: access })).status, 200, 'a token verified before, Redis stopped');
  const refused = await call('POST', '/api/v1/auth/login', { json: { username, password }, retry: false });
  assert.equal(refused.status, 503, `a login with Redis stopped answered ${refused.status}`);
  assert.ok(Number(refused.headers.get('retry-after')) > 0, 'the 503 says when to come back');
  await podman(['start', project.container('redis')]);
  await ready();

  // And it fails when the gateway cannot answer at all: its process stopped (SIGSTOP from the engine). The
  // command gives up by itself (podman 4.3's `healthcheck run` does not enforce the timeout).
  progress('    the gateway frozen (SIGSTOP): the health check fails');
  await podman(['kill', '--signal', 'SIGSTOP', gatehouse]);
  try {
    const frozen = await podman(['healthcheck', 'run', gatehouse], { allowFailure: true });
    assert.notEqual(frozen.code, 0, 'the health check passed while the gateway was stopped');
  } finally {
    await podman(['kill', '--signal', 'SIGCONT', gatehouse]);
  }
  await healthy('after the gateway resumed');
}

async function healthy(when: string): Promise<void> {
  const run = await podman(['healthcheck', 'run', gatehouse], { allowFailure: true });
  assert.equal(run.code, 0, `podman healthcheck run ${when}: ${run.stdout}${run.stderr}`);
}

async function checkGracefulStop(): Promise<void> {
  // The compose file's grace (podman-compose 1.0 does not pass stop_grace_period on, so podman stop is given it).
  const compose = parse(readFileSync('docker-compose.yml', 'utf8')) as { services: { gatehouse: { stop_grace_period: string } } };
  const grace = Number(/^(\d+)s$/.exec(compose.services.gatehouse.stop_grace_period)?.[1]);
  assert.ok(grace > 30, `stop_grace_period ${grace} s: not longer than server.shutdownGraceS (30 s)`);
  const started = Date.now();
  await podman(['stop', '--time', String(grace), gatehouse]);
  const seconds = ((Date.now() - started) / 1000).toFixed(1);
  const exit = (await podman(['inspect', gatehouse, '--format', '{{.State.ExitCode}}'])).stdout.trim();
  // 137 would be the SIGKILL podman sends when the grace runs out.
  assert.equal(exit, '0', `after SIGTERM the gateway exited with ${exit} (${seconds} s, grace ${grace} s)`);
  progress(`    exited 0 after SIGTERM in ${seconds} s (grace ${grace} s)`);
}

async function showLogs(): Promise<void> {
  for (const service of ['gatehouse', 'backend', 'redis']) {
    const logs = await podman(['logs', '--tail', '40', project.container(service)], { allowFailure: true });
    process.stdout.write(`--- last log lines of ${service} ---\n${logs.stdout}${logs.stderr}`);
  }
}

let interrupted = false;
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => {
    interrupted = true;
    progress(`${signal}: removing the compose project`);
    void project.remove().finally(() => process.exit(130));
  });
}

let failed = false;
try {
  await steps();
} catch (error) {
  failed = true;
  process.stdout.write(`\n[container] FAILED: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
  if (!interrupted) await showLogs();
} finally {
  if (!interrupted) {
    progress('removing the compose project: containers, volumes, network');
    await project.remove();
    const left = await project.leftovers();
    if (left.length > 0) {
      failed = true;
      process.stdout.write(`[container] FAILED: left behind after compose down: ${left.join(', ')}\n`);
    }
  }
}
progress(failed ? 'container test failed' : 'container test passed');
process.exitCode = failed ? 1 : 0;
