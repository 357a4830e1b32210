// The settings that rotate a secret without an outage (docs/operations/rotations.md):
// each comes from its environment variable, is held to the same rule as the
// secret it stands beside, and is refused without it, naming the field.
import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { parseConfig } from '../../src/config-load/load.js';
import { configProblems } from '../helpers/config-problems.js';

const MINIMAL = { identity: { provider: 'local', usersFile: './users.yaml' }, tokens: { keysFile: './keys.json' } };
const [CURRENT, OTHER] = [randomBytes(32).toString('base64'), randomBytes(32).toString('base64')];

describe('rotation secrets in the config', () => {
  it('reads each from its environment variable', () => {
    const config = parseConfig(MINIMAL, {
      baseDir: '/',
      env: {
        GATEHOUSE_SERVICE_TOKEN: CURRENT,
        GATEHOUSE_SERVICE_TOKEN_PREVIOUS: OTHER,
        GATEHOUSE_KEY_SEAL_SECRET: CURRENT,
        GATEHOUSE_KEY_SEAL_SECRET_NEXT: OTHER,
        GATEHOUSE_KEY_SEAL_SECRET_PREVIOUS: `${OTHER}x`,
      },
    });
    expect(config.requests).toMatchObject({ serviceToken: CURRENT, serviceTokenPrevious: OTHER });
    expect(config.tokens).toMatchObject({ keySealSecret: CURRENT, keySealSecretNext: OTHER, keySealSecretPrevious: `${OTHER}x` });
  });

  it('holds each to at least 32 characters, naming the variable it came from', () => {
    const env = { GATEHOUSE_SERVICE_TOKEN: CURRENT, GATEHOUSE_SERVICE_TOKEN_PREVIOUS: 'short', GATEHOUSE_KEY_SEAL_SECRET: 'short' };
    const problems = configProblems(() => parseConfig(MINIMAL, { baseDir: '/', env }));
    expect(problems).toEqual([
      'tokens.keySealSecret (from GATEHOUSE_KEY_SEAL_SECRET): must be at least 32 characters',
      'requests.serviceTokenPrevious (from GATEHOUSE_SERVICE_TOKEN_PREVIOUS): must be at least 32 characters',
    ]);
  });

  it('refuses a made-up one as it refuses a made-up service token', () => {
    const env = { GATEHOUSE_SERVICE_TOKEN: CURRENT, GATEHOUSE_KEY_SEAL_SECRET_NEXT: 'replace-me-with-at-least-32-random-characters' };
    const problems = configProblems(() => parseConfig(MINIMAL, { baseDir: '/', env }));
    expect(problems).toEqual([expect.stringMatching(/^tokens\.keySealSecretNext \(from GATEHOUSE_KEY_SEAL_SECRET_NEXT\): is a placeholder/)]);
  });

  it('refuses a previous service token without a current one', () => {
    const problems = configProblems(() => parseConfig({ ...MINIMAL, requests: { serviceTokenPrevious: OTHER } }, { baseDir: '/', env: {} }));
    expect(problems).toEqual([expect.stringMatching(/^requests\.serviceTokenPrevious: needs requests\.serviceToken/)]);
  });

  it('refuses a next or previous seal secret without one that seals', () => {
    const tokens = { ...MINIMAL.tokens, keySealSecretNext: OTHER, keySealSecretPrevious: OTHER };
    const problems = configProblems(() => parseConfig({ ...MINIMAL, tokens }, { baseDir: '/', env: {} }));
    expect(problems).toEqual([
      expect.stringMatching(/^tokens\.keySealSecretNext: needs tokens\.keySealSecret/),
      expect.stringMatching(/^tokens\.keySealSecretPrevious: needs tokens\.keySealSecret/),
    ]);
    // The service token seals when the seal has no secret of its own (as before the setting existed).
    expect(parseConfig({ ...MINIMAL, tokens, requests: { serviceToken: CURRENT } }, { baseDir: '/', env: {} }).tokens.keySealSecretNext).toBe(OTHER);
  });
});
