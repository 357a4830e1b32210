// The contract of KeysStore: signing keys and instance views kept as the text given, and key changes
// announced to every instance.
import { expect, it, vi } from 'vitest';
import type { StoreUnderTest } from '../store-contract.js';

export function sharedKeysContract(subject: StoreUnderTest): void {
  it('keeps, finds, lists and removes key entries as the text it was given; another instance sees the same', async () => {
    const { store, peer } = subject;
    const keys = store.sharedKeys!;
    const other = (peer ?? store).sharedKeys!;
    const text = '{"v":1,"payload":"ü \\"quoted\\" 𝄞"}';
    await keys.putKey('kid-a', text);
    await keys.putKey('kid-b', 'b');
    expect(await other.findKey('kid-a')).toBe(text);
    expect(await other.findKey('kid-missing')).toBeNull();
    expect(await other.allKeys()).toStrictEqual(
      new Map([
        ['kid-a', text],
        ['kid-b', 'b'],
      ]),
    );
    await keys.putKey('kid-b', 'b2');
    expect(await other.findKey('kid-b')).toBe('b2');
    await other.removeKeys(['kid-a']);
    await other.removeKeys([]);
    expect(await keys.allKeys()).toStrictEqual(new Map([['kid-b', 'b2']]));
  });

  it('keeps, lists and removes instance views', async () => {
    const { store, peer } = subject;
    const keys = store.sharedKeys!;
    const other = (peer ?? store).sharedKeys!;
    await keys.putInstance('i-1', 'one');
    await other.putInstance('i-2', 'two');
    expect(await keys.allInstances()).toStrictEqual(
      new Map([
        ['i-1', 'one'],
        ['i-2', 'two'],
      ]),
    );
    await keys.removeInstances(['i-2']);
    expect(await other.allInstances()).toStrictEqual(new Map([['i-1', 'one']]));
  });

  it('tells this instance and every other one that keys changed', async () => {
    const { store, peer } = subject;
    let heardHere = 0;
    let heardThere = 0;
    store.sharedKeys!.onKeysChanged(() => (heardHere += 1));
    const off = (peer ?? store).sharedKeys!.onKeysChanged(() => (heardThere += 1));
    await store.sharedKeys!.announceKeysChanged();
    await vi.waitFor(() => expect([heardHere, heardThere]).toStrictEqual([1, 1]));
    off();
  });
}
