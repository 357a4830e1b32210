// A Redis that answers but refuses this client, told apart from one that is
// down, so that the log says what to change rather than only "timed out".
// Protected mode (`-DENIED …`) writes its refusal as soon as a client
// connects and closes the connection: ioredis reads it as the answer to the
// first command it sends (CLIENT SETINFO, whose errors it ignores) and then
// fails with `write EPIPE`. So the first bytes of each new socket are read
// here too; NOAUTH and WRONGPASS arrive as ordinary reply errors.
import { Cluster, type Redis } from 'ioredis';
import type { RedisClient } from './redis-client.js';

export interface Refusal {
  /** The reply's first line, up to its first sentence (DENIED's goes on for a paragraph). */
  reply: string;
  /** What the operator changes. */
  fix: string;
}

const FIXES: Array<[RegExp, string]> = [
  [
    /^DENIED\b/,
    'Redis runs in protected mode and accepts no client outside its own loopback interface while no password is set: ' +
      'give it a password (requirepass, or an ACL user) and put it in store.url (redis://:PASSWORD@host:6379); ' +
      'or, only on a network nobody else reaches, start it with --protected-mode no',
  ],
  [/^NOAUTH\b/, 'Redis requires a password: put it in store.url (redis://:PASSWORD@host:6379, or redis://USER:PASSWORD@host:6379 for an ACL user)'],
  [/^WRONGPASS\b/, "Redis refuses store.url's username or password: make them those of requirepass or of an ACL user Redis knows"],
];

/** The refusal an error reply (or an ioredis error wrapping one) names, or undefined for any other failure. */
export function refusalOf(message: string): Refusal | undefined {
  const reply = message.replace(/^(Ready check failed|Error): /, '').replace(/^-/, '');
  const fix = FIXES.find(([pattern]) => pattern.test(reply))?.[1];
  if (fix === undefined) return undefined;
  const firstLine = reply.split(/\r?\n/)[0] ?? reply;
  const firstSentence = /^.*?\.(?=\s|$)/.exec(firstLine)?.[0] ?? firstLine;
  return { reply: firstSentence, fix };
}

/** Calls `onRefusal` when a new connection of `client` (each node's, on a Cluster) is greeted with a refusal. */
export function watchGreetings(client: RedisClient, onRefusal: (refusal: Refusal) => void): void {
  const watch = (connection: Redis) =>
    connection.on('connect', () => {
      // Only the first chunk: after it, the connection's replies are ioredis's to read.
      connection.stream?.once('data', (chunk: Buffer) => {
        if (chunk[0] !== 0x2d /* '-' */) return;
        const refusal = refusalOf(chunk.subarray(0, 1_024).toString('latin1'));
        if (refusal) onRefusal(refusal);
      });
    });
  if (client instanceof Cluster) client.on('+node', watch);
  else watch(client as Redis);
}
