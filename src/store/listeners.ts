// A small listener registry shared by the stores: revocations now, status
// changes later. One faulty listener must neither hide an event from the
// others nor turn a completed store operation into a failed request.
import type { Logger } from 'pino';

export class Listeners<T> {
  readonly #listeners = new Set<(value: T) => void>();
  readonly #logger: Logger | undefined;
  readonly #what: string;

  constructor(what: string, logger?: Logger) {
    this.#what = what;
    this.#logger = logger;
  }

  /** Registers a listener; the returned function removes exactly this registration. */
  add(listener: (value: T) => void): () => void {
    // A wrapper per registration, so registering one function twice gives two
    // independent subscriptions, each removed by its own function.
    const registration = (value: T) => listener(value);
    this.#listeners.add(registration);
    return () => {
      this.#listeners.delete(registration);
    };
  }

  emit(value: T): void {
    for (const listener of [...this.#listeners]) {
      try {
        listener(value);
      } catch (error) {
        this.#logger?.error({ err: error }, `${this.#what} listener threw`);
      }
    }
  }

  clear(): void {
    this.#listeners.clear();
  }
}
