// Signing keys shared by instances that share a store but no file: each keeps
// its private key and publishes the public one (src/tokens/shared-keyset.ts).
// Instances here are key sets in one process, each with a keys file of its
// own, on one in-memory store's shared keys (the Redis one is the same
// contract: test/store/contract/shared-keys.ts; end to end: test/scale/).
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { calculateJwkThumbprint, exportJWK, generateKeyPair } from 'jose';
import { pino } from 'pino';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { MemorySharedKeys } from '../../src/store/memory-shared-keys.js';
import type { SharedKeyRecords } from '../../src/store/shared-keys.js';
import { rotateKeys } from '../../src/tokens/key-rotation.js';
import { loadKeySet } from '../../src/tokens/keyset.js';
import { EntrySeal } from '../../src/tokens/shared-key-entry.js';
import { SharedKeySet, type SharedKeySetOptions } from '../../src/tokens/shared-keyset.js';

const SECRET = 'a-service-token-of-at-least-32-characters';
const RETAIN_S = 3_600;
const HEARTBEAT_MS = 60_000;
const silent = pino({ level: 'silent' });

let dir: string;
let records: SharedKeyRecords & { reads: number };
const started: SharedKeySet[] = [];

/** The in-memory records, counting reads of every key. */
function countingRecords(): SharedKeyRecords & { reads: number } {
  const inner = new MemorySharedKeys();
  const counting = {
    reads: 0,
    putKey: (kid: string, text: string) => inner.putKey(kid, text),
    findKey: (kid: string) => inner.findKey(kid),
    allKeys: () => {
      counting.reads += 1;
      return inner.allKeys();
    },
    removeKeys: (kids: readonly string[]) => inner.removeKeys(kids),
    putInstance: (id: string, text: string) => inner.putInstance(id, text),
    allInstances: () => inner.allInstances(),
    removeInstances: (ids: readonly string[]) => inner.removeInstances(ids),
    announceKeysChanged: () => inner.announceKeysChanged(),
    onKeysChanged: (listener: () => void) => inner.onKeysChanged(listener),
  };
  return counting;
}

async function instance(name: string, options: Partial<SharedKeySetOptions> = {}): Promise<SharedKeySet> {
  const file = join(dir, `${name}.keys.json`);
  const local = await loadKeySet({ file, algorithm: 'EdDSA', retainS: RETAIN_S, logger: silent, watch: true });
  const shared = new SharedKeySet({
    local,
    records,
    instance: name,
    secret: SECRET,
    retainMs: RETAIN_S * 1000,
    logger: silent,
    heartbeatMs: HEARTBEAT_MS,
    ...options,
  });
  await shared.start();
  await shared.publish();
  started.push(shared);
  return shared;
}

beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'gatehouse-shared-keys-'));
  records = countingRecords();
});

afterEach(async () => {
  await Promise.all(started.splice(0).map((s) => s.close()));
  await rm(dir, { recursive: true, force: true });
});

const header = (kid: string) => ({ alg: 'EdDSA', kid });

describe('keys shared through the store', () => {
  it("verifies with every instance's key, and serves the union in the JWKS", async () => {
    const a = await instance('a');
    const b = await instance('b');
    const aKid = a.signingKey().kid;
    const bKid = b.signingKey().kid;
    expect(aKid).not.toBe(bKid);
    // b read the store at start and found a's key; a learns b's at the first token naming it.
    await expect(b.getVerificationKey(header(aKid))).resolves.toBeDefined();
    await expect(a.getVerificationKey(header(bKid))).resolves.toBeDefined();
    for (const set of [a, b])
      expect(
        set
          .publicJwks()
          .keys.map((k) => k.kid)
          .sort(),
      ).toStrictEqual([aKid, bKid].sort());
    expect(JSON.stringify(b.publicJwks())).not.toContain('"d"');
  });

  it('refuses a kid of its peer for another algorithm than the key was made for', async () => {
    const a = await instance('a');
    const b = await instance('b');
    await expect(b.getVerificationKey({ alg: 'ES256', kid: a.signingKey().kid })).rejects.toThrow('algorithm not allowed');
  });

  it('attack: a flood of made-up kids reads the store once (concurrent ones share the read), then not again within the cooldown', async () => {
    let now = Date.now();
    const b = await instance('b', { now: () => now, lookupCooldownMs: 1_000 });
    const before = records.reads;
    const unknown = Array.from({ length: 20 }, (_, i) => b.getVerificationKey(header(`unknown-${i}`)));
    for (const check of unknown) await expect(check).rejects.toThrow('unknown signing key');
    expect(records.reads - before).toBe(1);
    await expect(b.getVerificationKey(header('unknown-again'))).rejects.toThrow('unknown signing key');
    expect(records.reads - before).toBe(1);
    now += 1_001;
    await expect(b.getVerificationKey(header('unknown-later'))).rejects.toThrow('unknown signing key');
    expect(records.reads - before).toBe(2);
  });

  it('rotation is two-phase: every live peer trusts the new key before the rotating instance signs with it', async () => {
    const a = await instance('a');
    const b = await instance('b');
    const c = await instance('c');
    const previous = a.signingKey().kid;
    const trustedWhenSwitched = new Promise<string[][]>((resolve) => {
      // Emitted right after the keys file's new key is taken for signing.
      a.localReloaded(() => resolve([b.trustedKids(), c.trustedKids()]));
    });
    const { kid } = await rotateKeys({ file: join(dir, 'a.keys.json'), algorithm: 'EdDSA', retainS: RETAIN_S });
    const [bTrusts, cTrusts] = await trustedWhenSwitched;
    expect(a.signingKey().kid).toBe(kid);
    expect(bTrusts).toContain(kid);
    expect(cTrusts).toContain(kid);
    // The retired key keeps verifying everywhere: tokens it signed are still valid.
    await expect(b.getVerificationKey(header(previous))).resolves.toBeDefined();
    await expect(a.getVerificationKey(header(previous))).resolves.toBeDefined();
  });

  it("keeps verifying a gone instance's key until every token it can have signed has expired, then refuses it", async () => {
    let now = Date.now();
    const a = await instance('a');
    const b = await instance('b', { now: () => now, lookupCooldownMs: 0 });
    const aKid = a.signingKey().kid;
    await a.close();
    await expect(b.getVerificationKey(header(aKid))).resolves.toBeDefined();
    // a's last heartbeat published its key for the retention past the next two heartbeats.
    now += RETAIN_S * 1000 + 2 * HEARTBEAT_MS - 1_000;
    await expect(b.getVerificationKey(header(aKid))).resolves.toBeDefined();
    now += 2_000;
    await expect(b.getVerificationKey(header(aKid))).rejects.toThrow('unknown signing key');
  });

  it('attack: a public key planted in the store without the deployment seal is not trusted', async () => {
    const b = await instance('b', { lookupCooldownMs: 0 });
    // Whoever can write to Redis makes a key pair and publishes its public half, unsealed and sealed with a guess.
    const { publicKey } = await generateKeyPair('EdDSA', { extractable: true });
    const jwk = await exportJWK(publicKey);
    const kid = await calculateJwkThumbprint(jwk);
    const entry = { kid, alg: 'EdDSA' as const, jwk, instance: 'intruder', verifyUntil: Date.now() + 3_600_000 };
    for (const seal of [new EntrySeal(undefined), new EntrySeal('not-the-service-token-but-as-long-as-one')]) {
      await records.putKey(kid, seal.seal(entry));
      await records.announceKeysChanged();
      await expect(b.getVerificationKey(header(kid))).rejects.toThrow('unknown signing key');
      expect(b.publicJwks().keys.map((k) => k.kid)).not.toContain(kid);
    }
    // The same entry sealed with the service token is taken: the seal is what refused it.
    await records.putKey(kid, new EntrySeal(SECRET).seal(entry));
    await expect(b.getVerificationKey(header(kid))).resolves.toBeDefined();
  });

  it("attack: an entry passing off one key under another instance's kid is not trusted", async () => {
    const a = await instance('a');
    const b = await instance('b', { lookupCooldownMs: 0 });
    const { publicKey } = await generateKeyPair('EdDSA', { extractable: true });
    const forged = { kid: 'forged-kid', alg: 'EdDSA' as const, jwk: await exportJWK(publicKey), instance: 'a', verifyUntil: Date.now() + 3_600_000 };
    await records.putKey('forged-kid', new EntrySeal(SECRET).seal(forged));
    await expect(b.getVerificationKey(header('forged-kid'))).rejects.toThrow('unknown signing key');
    await expect(b.getVerificationKey(header(a.signingKey().kid))).resolves.toBeDefined();
  });

  it('takes its view out of the store when it closes, so no rotation waits for it', async () => {
    const a = await instance('a');
    const b = await instance('b');
    expect((await a.views.livePeers()).map((v) => v.instance)).toStrictEqual(['b']);
    await b.close();
    expect(await a.views.livePeers()).toStrictEqual([]);
  });
});
