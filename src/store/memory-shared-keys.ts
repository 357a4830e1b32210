// Shared signing keys on the in-memory store: one process, so only gateways
// handed the same MemoryStore share them (tests of several instances in one
// process). A deployment of several processes shares them through Redis.
import { Listeners } from './listeners.js';
import type { SharedKeyRecords } from './shared-keys.js';

export class MemorySharedKeys implements SharedKeyRecords {
  readonly #keys = new Map<string, string>();
  readonly #instances = new Map<string, string>();
  readonly #changed = new Listeners<void>('keys changed');

  async putKey(kid: string, text: string): Promise<void> {
    this.#keys.set(kid, text);
  }

  async findKey(kid: string): Promise<string | null> {
    return this.#keys.get(kid) ?? null;
  }

  async allKeys(): Promise<Map<string, string>> {
    return new Map(this.#keys);
  }

  async removeKeys(kids: readonly string[]): Promise<void> {
    for (const kid of kids) this.#keys.delete(kid);
  }

  async putInstance(id: string, text: string): Promise<void> {
    this.#instances.set(id, text);
  }

  async allInstances(): Promise<Map<string, string>> {
    return new Map(this.#instances);
  }

  async removeInstances(ids: readonly string[]): Promise<void> {
    for (const id of ids) this.#instances.delete(id);
  }

  async announceKeysChanged(): Promise<void> {
    // Asynchronous like the Redis echo: a listener never runs inside the announcer's call.
    queueMicrotask(() => this.#changed.emit());
  }

  onKeysChanged(listener: () => void): () => void {
    return this.#changed.add(listener);
  }
}
