// The seal of the published keys and its rotation (shared-key-entry.ts,
// peer-keys.ts): a next secret opens entries before anyone seals with it, a
// previous one opens what it sealed and has it sealed again with the current
// one, and an instance sealing with a secret nobody else holds is ignored,
// and named. Key sets in one process on one in-memory store's records (end
// to end on Redis: test/scale/rotations.test.ts).
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { MemorySharedKeys } from '../../src/store/memory-shared-keys.js';
import { loadKeySet } from '../../src/tokens/keyset.js';
import { EntrySeal, type AcceptedSealSecrets } from '../../src/tokens/shared-key-entry.js';
import { SharedKeySet } from '../../src/tokens/shared-keyset.js';

const OLD = 'the-old-seal-secret-0123456789abcdef0123';
const NEW = 'the-new-seal-secret-0123456789abcdef0123';
const ELSEWHERE = 'another-deployments-seal-secret-01234567';
const silent = pino({ level: 'silent' });

let dir: string;
let records: MemorySharedKeys;
const sets: SharedKeySet[] = [];

async function published(name: string, secret: string, accepted: AcceptedSealSecrets = {}): Promise<SharedKeySet> {
  const local = await loadKeySet({ file: join(dir, `${name}.keys.json`), algorithm: 'EdDSA', retainS: 3600, logger: silent });
  const set = new SharedKeySet({ local, records, instance: name, secret, acceptedSecrets: accepted, retainMs: 3_600_000, logger: silent });
  sets.push(set);
  await set.start();
  await set.publish();
  return set;
}

const header = (set: SharedKeySet) => ({ alg: 'EdDSA', kid: set.signingKey().kid });

beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'gatehouse-seal-'));
  records = new MemorySharedKeys();
});

afterEach(async () => {
  await Promise.all(sets.splice(0).map((set) => set.close()));
  await rm(dir, { recursive: true, force: true });
});

describe('EntrySeal', () => {
  const body = { instance: 'a', signing: 'k', kids: ['k'], seenAt: 1 };

  it('seals with the current secret only, and opens what any of its secrets sealed, saying which', () => {
    const rotating = new EntrySeal(NEW, { next: ELSEWHERE, previous: OLD });
    expect(rotating.openSealed(new EntrySeal(OLD).seal(body))).toMatchObject({ body, role: 'previous' });
    expect(rotating.openSealed(new EntrySeal(ELSEWHERE).seal(body))).toMatchObject({ role: 'next' });
    expect(rotating.openSealed(rotating.seal(body))).toMatchObject({ role: 'current' });
    expect(new EntrySeal(OLD).open(rotating.seal(body))).toBeNull();
    expect(new EntrySeal(NEW).open(rotating.seal(body))).toStrictEqual(body);
  });

  it('attack: refuses an entry whose MAC none of its secrets made, or that has none', () => {
    const rotating = new EntrySeal(NEW, { previous: OLD });
    expect(rotating.open(new EntrySeal('a-secret-nobody-here-holds-0123456789ab').seal(body))).toBeNull();
    expect(rotating.open(new EntrySeal(undefined).seal(body))).toBeNull();
  });
});

describe('a rotation of the seal', () => {
  it('phase one: an instance that accepts the next secret trusts keys sealed with it, and seals with the current one', async () => {
    // An instance already in phase two (sealing with the new secret), as during the second rolling restart.
    const sealingNew = await published('b', NEW, { previous: OLD });
    const phaseOne = await published('a', OLD, { next: NEW });
    await expect(phaseOne.getVerificationKey(header(sealingNew))).resolves.toBeDefined();
    await expect(sealingNew.getVerificationKey(header(phaseOne))).resolves.toBeDefined();
    // It does not seal again what the next secret sealed: only phase two does, in one direction, so the two never undo each other.
    await phaseOne.heartbeatNow();
    expect(new EntrySeal(NEW).open((await records.findKey(sealingNew.signingKey().kid))!)).not.toBeNull();
  });

  it('phase two: keys sealed with the previous secret are trusted and sealed again with the current one', async () => {
    const oldOnly = await published('a', OLD);
    const kid = oldOnly.signingKey().kid;
    // Its instance stops (a pod replaced): its key stays in the store, sealed with the old secret, while its tokens are valid.
    await oldOnly.close();
    const phaseTwo = await published('b', NEW, { previous: OLD });
    await expect(phaseTwo.getVerificationKey({ alg: 'EdDSA', kid })).resolves.toBeDefined();
    expect(new EntrySeal(NEW).open((await records.findKey(kid))!)).not.toBeNull();
    // So after the previous secret is removed, an instance with the new one alone still trusts it.
    const after = await published('c', NEW);
    await expect(after.getVerificationKey({ alg: 'EdDSA', kid })).resolves.toBeDefined();
  });

  it('without it, an instance with the new secret alone ignores the keys the old one sealed', async () => {
    const kid = (await published('a', OLD)).signingKey().kid;
    const newOnly = await published('b', NEW);
    await expect(newOnly.getVerificationKey({ alg: 'EdDSA', kid })).rejects.toThrow('unknown signing key');
  });

  it('names the instances whose views it cannot open, and they name it', async () => {
    const a = await published('a', OLD);
    const b = await published('b', OLD);
    const odd = await published('odd', ELSEWHERE);
    for (const set of [a, b, odd]) await set.heartbeatNow();
    expect(a.lastViews).toMatchObject({ peers: [{ instance: 'b' }], unopened: ['odd'] });
    expect(odd.lastViews).toMatchObject({ peers: [], unopened: ['a', 'b'] });
  });
});
