// Inputs the fuzz tests of this folder found mishandled, kept as plain tests
// so they are checked on every run whatever the random seed.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig, parseConfig } from '../../src/config/load.js';
import { rawExchange } from '../helpers/raw-exchange.js';
import { ask, expectDiagnoses, expectNoServerErrors, failOnCrashes, fuzzBench } from './support.js';

failOnCrashes();
const bench = fuzzBench();

describe('a status poll by POST', () => {
  // Found by status-bodies.test.ts: Fastify refused a Content-Type it cannot
  // parse before any body parser ran, and the answer said "Content-Type must
  // be application/json", though this endpoint takes any body and drops it.
  it.each(['', ';', 'application/', 'a b', 'text/plain;;'])('gets the status whatever the Content-Type says (%j)', async (type) => {
    const { gw, alice } = bench();
    const authorization = `Bearer ${alice.access_token}`;
    const job = await ask(`${gw.url}/svc/jobs`, { method: 'POST', headers: { authorization } });
    const { requestId } = JSON.parse(job.body.toString('utf8')) as { requestId: string };
    for (const body of ['', '{"x":1}']) {
      const answer = await ask(`${gw.url}/api/v1/requests/${requestId}/status`, { method: 'POST', headers: { authorization, 'content-type': type }, body });
      expect(answer.status, answer.body.toString('utf8')).toBe(200);
      expect(JSON.parse(answer.body.toString('utf8'))).toEqual({ status: 'pending' });
    }
    expectNoServerErrors(gw);
  });
});

describe('a URL the router cannot decode', () => {
  // Found by paths.test.ts: Fastify answered a malformed escape on a gateway
  // path with its own error JSON ({"error":"Bad Request","code":"FST_ERR_BAD_URL",…}),
  // not the diagnostics body, on both listeners.
  it.each(['/api/v1/auth/%zz', '/oauth/%', '/api/v1/requests/%E0%A4%A/status', '/.well-known/%zz'])('on the public listener gets a 400 diagnoses body (%s)', async (path) => {
    const { gw } = bench();
    const answer = await rawExchange(gw.url, [`GET ${path} HTTP/1.1`, 'host: 127.0.0.1', 'connection: close']);
    expect(expectDiagnoses({ ...answer, body: Buffer.from(answer.body, 'utf8') }, [400])).toBe('400 (Bad Request) - invalid_request: the URL is malformed');
  });

  it('on the admin listener gets a 400 diagnoses body', async () => {
    const { gw } = bench();
    const answer = await rawExchange(gw.adminUrl!, ['PUT /internal/v1/requests/%zz/status HTTP/1.1', 'host: 127.0.0.1', 'connection: close', 'content-length: 0']);
    expect(expectDiagnoses({ ...answer, body: Buffer.from(answer.body, 'utf8') }, [400])).toBe('400 (Bad Request) - invalid_request: the URL is malformed');
  });

  it('with a request id longer than the router takes gets a 4xx diagnoses body', async () => {
    const { gw } = bench();
    const answer = await rawExchange(gw.adminUrl!, [`PUT /internal/v1/requests/${'a'.repeat(200)}/status HTTP/1.1`, 'host: 127.0.0.1', 'connection: close', 'content-length: 0']);
    expectDiagnoses({ ...answer, body: Buffer.from(answer.body, 'utf8') }, [400, 401, 404]);
  });
});

describe('a config file', () => {
  /** A ConfigError with exactly these problems. */
  const configError = (...problems: unknown[]) => expect.objectContaining({ constructor: ConfigError, problems });

  // Found by config.test.ts: the yaml library refuses to expand aliases past a
  // limit (a few bytes that would expand to millions of nodes) by throwing a
  // ReferenceError, which escaped the loader instead of a ConfigError (exit 78).
  it('whose aliases expand too far is refused with a ConfigError', () => {
    const dir = mkdtempSync(join(tmpdir(), 'gatehouse-found-'));
    try {
      const file = join(dir, 'gatehouse.yaml');
      const levels = Array.from({ length: 6 }, (_, i) => `x${i + 1}: &x${i + 1} [${Array(10).fill(i === 0 ? '0' : `*x${i}`).join(',')}]`);
      writeFileSync(file, `identity: {provider: local, usersFile: users.yaml}\ntokens: {keysFile: keys.json}\n${levels.join('\n')}\n`);
      expect(() => loadConfig({ file, env: {} })).toThrow(configError(expect.stringMatching(/^YAML: .*alias/i)));
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  // Found by config.test.ts: the one problem without a field path.
  it.each([[[]], ['text'], [null], [42]])('that is not a mapping names the top level as its field (%j)', (raw) => {
    expect(() => parseConfig(raw, { baseDir: '/', env: {} })).toThrow(configError(expect.stringMatching(/^\(top level\): must be a mapping of sections/)));
  });
});
