// `gatehouse audit prune`: retention on demand. The oldest entries go, the cut is an entry naming the operator, and
// `audit verify` still finds the chain intact; without a limit (configured or given) it says so and cuts nothing.
import { rm } from 'node:fs/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AuditEntry } from '../../src/audit/entry.js';
import { deployment, type Deployment } from './fleet-trail.js';

let deployed: Deployment;

beforeAll(async () => {
  deployed = await deployment();
});
afterAll(async () => {
  await rm(deployed.dir, { recursive: true, force: true });
});

async function entries(): Promise<AuditEntry[]> {
  const listed = await deployed.gatehouse('audit', 'list', '--json');
  expect(listed.code, listed.stderr).toBe(0);
  return JSON.parse(listed.stdout) as AuditEntry[];
}

describe('audit prune', () => {
  it('refuses to cut without a limit, or with one that does not read, and cuts nothing', async () => {
    for (const action of ['disable', 'enable', 'disable', 'enable']) expect((await deployed.gatehouse('users', action, 'alice')).code).toBe(0);
    const none = await deployed.gatehouse('audit', 'prune');
    expect(none.code).toBe(2);
    expect(none.stderr).toContain('audit.retention');
    const bad = await deployed.gatehouse('audit', 'prune', '--max-entries', '1');
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('--max-entries');
    expect(await entries()).toHaveLength(4);
  });

  it('cuts the oldest entries, records the cut with the operator, and the chain verifies', async () => {
    const pruned = await deployed.gatehouse('audit', 'prune', '--max-entries', '3');
    expect(pruned.code, pruned.stderr).toBe(0);
    expect(pruned.stdout).toContain('cut 2 entries');
    const kept = await entries();
    expect(kept.map((entry) => [entry.seq, entry.kind])).toEqual([
      [2, 'user.disabled'],
      [3, 'user.enabled'],
      [4, 'audit.retention'],
    ]);
    expect(kept[2]).toMatchObject({ actor: { kind: 'operator' }, details: { removed: 2, keptFrom: 2, keptFromPrev: kept[0]!.prev, maxEntries: 3 } });
    expect(kept[2]!.actor.id).toMatch(/^.+@.+$/);
    const verified = await deployed.gatehouse('audit', 'verify');
    expect(verified.code, verified.stdout).toBe(0);
    expect(verified.stdout).toMatch(/chain intact/);

    const again = await deployed.gatehouse('audit', 'prune', '--max-entries', '3');
    expect(again.code, again.stderr).toBe(0);
    expect(again.stdout).toContain('cut 1 entry;');
  });
});
