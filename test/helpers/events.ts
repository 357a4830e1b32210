// Waiting on what a component reports rather than on the clock.
import { on, type EventEmitter } from 'node:events';

/**
 * The arguments of the first `event` emitted after this call that `accept`
 * takes (a file written in two steps may be seen half done first). Call it
 * before causing the event: listening starts at once.
 */
export async function nextEvent<Args extends unknown[]>(emitter: EventEmitter, event: string, accept: (...args: Args) => boolean = () => true): Promise<Args> {
  for await (const args of on(emitter, event)) if (accept(...(args as Args))) return args as Args;
  throw new Error(`${event}: the emitter stopped`);
}
