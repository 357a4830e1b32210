// `npm test` sets up what the suite needs from the system before any test runs
// (scripts/test-prerequisites.sh, its pretest step). Where it cannot install,
// it must stop at once with the one command that installs what is missing.
import { spawnSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';

const SCRIPT = 'scripts/test-prerequisites.sh';

function run(env: Record<string, string>) {
  const result = spawnSync('bash', [SCRIPT], { env: { ...process.env, TEST_PREREQUISITES_INSTALL: 'never', ...env }, encoding: 'utf8' });
  return { status: result.status, out: `${result.stdout}${result.stderr}` };
}

describe('the test prerequisites step', () => {
  it('passes quietly when redis-server, redis-cli and chromium are there', () => {
    // The suite itself is running, so they are.
    expect(run({})).toEqual({ status: 0, out: '' });
  });

  it('stops with the one command that installs a missing browser, before any test runs', () => {
    const { status, out } = run({ CHROMIUM_PATH: '/nonexistent/chromium' });
    expect(status).toBe(1);
    expect(out).toContain('test prerequisites missing: chromium');
    expect(out).toContain('apt-get install -y chromium');
  });

  it('names every missing package in that command', () => {
    const { status, out } = run({ CHROMIUM_PATH: '/nonexistent/chromium', REDIS_SERVER_BIN: 'no-such-redis-server' });
    expect(status).toBe(1);
    expect(out).toContain('apt-get install -y redis-server chromium');
  });
});
