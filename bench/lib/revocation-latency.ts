// How long a stream held open through one instance outlives its session's
// end on another (or on the same one): open an event stream, revoke its
// session, time the stream's clean end from the moment the revocation was
// sent. Repeated, each round with a session of its own, so the figures are
// percentiles, not one round's luck. Shared by the bench section
// (bench/session-end.ts, processes of their own) and its test
// (test/bench/revocation-latency.test.ts, gateways in the test's process).
//
// Every wait has a bound: a stream that never ends, a request never answered
// or a server that stopped answering fails the round with what it waited
// for, and the run stops there instead of hanging.
import { once } from 'node:events';
import { request, type IncomingMessage } from 'node:http';
import { setTimeout as delay } from 'node:timers/promises';
import { hashPassword } from '../../src/users/passwords.js';
import { addUser, setDisabled } from '../../src/users/users-changes.js';
import { readUsersFile, writeUsersFile } from '../../src/users/users-file.js';

/** One round's figures, in milliseconds from the moment the revocation was sent. */
export interface RevocationSample {
  /** The revocation's own answer (204) came. */
  answeredMs: number;
  /** The stream's last chunk came: it ended cleanly. */
  streamEndedMs: number;
}

/** A session ready to be revoked: the token its stream is opened with, and how it is ended. */
export interface PreparedSession {
  streamToken: string;
  /** Sends the revocation; resolves once it is answered (done), rejects when it failed. */
  revoke(): Promise<void>;
  /** After the round (outside what is measured): ends what preparing it left open. */
  cleanUp?(): Promise<void>;
}

export interface RevocationRun {
  /** For the progress lines. */
  label: string;
  /** An event stream through the instance that does not hear the revocation first (`<base>/events`). */
  streamUrl: string;
  rounds: number;
  /** A fresh session for one round (logged in on the instance that will revoke it). */
  prepare(): Promise<PreparedSession>;
  /** The bound of every wait (default 5 s). */
  deadlineMs?: number;
  /** A progress line now and then (default: none). */
  say?: (line: string) => void;
}

const DEFAULT_DEADLINE_MS = 5_000;

/** `work`, or a rejection naming `what` once `ms` have passed without its answer. */
export async function within<T>(what: string, ms: number, work: Promise<T>): Promise<T> {
  const cancel = new AbortController();
  const late = delay(ms, undefined, { signal: cancel.signal }).then(() => {
    throw new Error(`${what}: nothing within ${ms} ms`);
  });
  try {
    // race() subscribes to `late`: its rejection by the abort below is handled there.
    return await Promise.race([work, late]);
  } finally {
    cancel.abort();
  }
}

/** An open stream: resolves `ended` with `complete` (its last chunk came) when the response ends or its connection closes. */
async function openStream(url: string, token: string, deadlineMs: number): Promise<{ ended: Promise<boolean>; destroy(): void }> {
  const req = request(url, { headers: { authorization: `Bearer ${token}`, accept: 'text/event-stream' }, agent: false });
  req.on('error', () => {}); // a cut connection shows as an incomplete end below
  req.end();
  try {
    const [res] = (await within('the stream to be answered', deadlineMs, once(req, 'response'))) as [IncomingMessage];
    if (res.statusCode !== 200) throw new Error(`the stream was refused: ${res.statusCode}`);
    const ended = new Promise<boolean>((resolve) => {
      res.once('end', () => resolve(res.complete));
      res.once('close', () => resolve(res.complete));
    });
    await within('the stream to deliver its first event', deadlineMs, once(res, 'data'));
    res.resume();
    return { ended, destroy: () => req.destroy() };
  } catch (error) {
    req.destroy(); // nothing is left open by a round that failed
    throw error;
  }
}

/** Measures `rounds` revocations, one after the other; throws on a round that fails or exceeds its bound. */
export async function measureRevocations(run: RevocationRun): Promise<RevocationSample[]> {
  const deadlineMs = run.deadlineMs ?? DEFAULT_DEADLINE_MS;
  const samples: RevocationSample[] = [];
  for (let round = 1; round <= run.rounds; round++) {
    const session = await within('a session to be prepared', deadlineMs, run.prepare());
    const stream = await openStream(run.streamUrl, session.streamToken, deadlineMs);
    try {
      const sent = performance.now();
      const answered = session.revoke().then(() => performance.now() - sent);
      const ended = stream.ended.then((complete) => {
        if (!complete) throw new Error('the stream was cut, not ended');
        return performance.now() - sent;
      });
      const [answeredMs, streamEndedMs] = await within(`round ${round}: the revocation and the stream's end`, deadlineMs, Promise.all([answered, ended]));
      samples.push({ answeredMs, streamEndedMs });
    } finally {
      stream.destroy();
    }
    await within('the round to be cleaned up', deadlineMs, session.cleanUp?.() ?? Promise.resolve());
    if (run.say !== undefined && (round % 10 === 0 || round === run.rounds)) run.say(`${run.label}: ${round}/${run.rounds} rounds`);
  }
  return samples;
}

/** POSTs JSON, bounded; the answer's status and JSON body (or null). */
async function postJson(url: string, body: unknown, headers: Record<string, string>, deadlineMs: number): Promise<{ status: number; json: unknown }> {
  const response = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify(body),
    signal: AbortSignal.timeout(deadlineMs),
  });
  const text = await response.text();
  return { status: response.status, json: text === '' ? null : (JSON.parse(text) as unknown) };
}

interface TokenSet {
  access_token: string;
  refresh_token: string;
}

async function logIn(base: string, username: string, secret: string, deadlineMs: number): Promise<TokenSet> {
  const { status, json } = await postJson(`${base}/api/v1/auth/login`, { username, password: secret }, {}, deadlineMs);
  if (status !== 200) throw new Error(`login as ${username} answered ${status}`);
  return json as TokenSet;
}

/** Sessions ended by logout on `base`: the stream is opened with the refresh token (it would otherwise run for as long as the session). */
export function byLogout(base: string, username: string, password: string, deadlineMs = DEFAULT_DEADLINE_MS): () => Promise<PreparedSession> {
  return async () => {
    const tokens = await logIn(base, username, password, deadlineMs);
    const logout = async () => {
      const { status } = await postJson(`${base}/api/v1/auth/logout`, {}, { authorization: `Bearer ${tokens.access_token}` }, deadlineMs);
      if (status !== 204) throw new Error(`logout answered ${status}`);
    };
    return { streamToken: tokens.refresh_token, revoke: logout };
  };
}

/**
 * Sessions ended by their API key's revocation on `base` (the account API):
 * each round makes a key with a password login, logs in with the key and
 * streams with that session's token, then revokes the key.
 */
export function byApiKeyRevocation(base: string, username: string, password: string, deadlineMs = DEFAULT_DEADLINE_MS): () => Promise<PreparedSession> {
  return async () => {
    const owner = await logIn(base, username, password, deadlineMs);
    const ownerBearer = { authorization: `Bearer ${owner.access_token}` };
    const made = await postJson(`${base}/api/v1/account/api-keys`, { label: 'revocation-latency' }, ownerBearer, deadlineMs);
    if (made.status !== 201) throw new Error(`the key was not made: ${made.status}`);
    const { id, key } = made.json as { id: string; key: string };
    const byKey = await logIn(base, username, key, deadlineMs);
    const revoke = async () => {
      const response = await fetch(`${base}/api/v1/account/api-keys/${id}`, {
        method: 'DELETE',
        headers: ownerBearer,
        signal: AbortSignal.timeout(deadlineMs),
      });
      await response.arrayBuffer();
      if (response.status !== 204) throw new Error(`the key's revocation answered ${response.status}`);
    };
    // The owner's own session is not what is measured; it goes once the key has.
    const cleanUp = async () => void (await postJson(`${base}/api/v1/auth/logout`, {}, ownerBearer, deadlineMs));
    return { streamToken: byKey.access_token, revoke, cleanUp };
  };
}

/** How often each instance reads the users file's stats (src/users/users-source.ts). */
const USERS_FILE_POLL_MS = 500;

/** Cheap scrypt for the users made here: what is measured is the session's end, not a login. */
const CHEAP_HASH = { logN: 10, r: 8, p: 1 };

/**
 * Adds `count` users with `password` to the users file every instance
 * watches, and resolves once each of `bases` lets the first of them log in
 * (each instance reads the file at its own poll); their names, in order.
 */
export async function addUsers(
  usersFile: string,
  prefix: string,
  count: number,
  password: string,
  bases: string[],
  deadlineMs = DEFAULT_DEADLINE_MS,
): Promise<string[]> {
  const usernames = Array.from({ length: count }, (_, i) => `${prefix}-${i}`);
  const passwordHash = await hashPassword(password, CHEAP_HASH);
  let data = await readUsersFile(usersFile);
  for (const username of usernames) data = addUser(data, username, passwordHash);
  await writeUsersFile(usersFile, data);
  for (const base of bases) {
    // A handful of refusals at most (the file is polled twice a second), well under the login throttle's free failures.
    const until = performance.now() + deadlineMs;
    let tokens: TokenSet | undefined;
    while (tokens === undefined) {
      const { status, json } = await postJson(`${base}/api/v1/auth/login`, { username: usernames[0], password }, {}, deadlineMs);
      if (status === 200) tokens = json as TokenSet;
      else if (performance.now() > until) throw new Error(`${base} did not read the new users within ${deadlineMs} ms`);
      else await delay(250);
    }
    await postJson(`${base}/api/v1/auth/logout`, {}, { authorization: `Bearer ${tokens.access_token}` }, deadlineMs);
  }
  return usernames;
}

/**
 * Sessions ended by their user's being disabled in the users file (what
 * `gatehouse users disable` writes): one user of `usernames` per round,
 * logged in on `base`; the revocation is the file's write, and the instances
 * hear of it when they next poll the file.
 */
export function byUserDisabled(
  base: string,
  usersFile: string,
  usernames: string[],
  password: string,
  deadlineMs = DEFAULT_DEADLINE_MS,
): () => Promise<PreparedSession> {
  const left = [...usernames];
  return async () => {
    const username = left.shift();
    if (username === undefined) throw new Error('no user left to disable');
    const tokens = await logIn(base, username, password, deadlineMs);
    // Rounds follow each other at the pace of the poll that ends them: without
    // a pause of a random part of its interval, every write would fall just
    // after a poll and wait nearly a whole interval, never a typical share of one.
    await delay(Math.random() * USERS_FILE_POLL_MS);
    const disable = async () => writeUsersFile(usersFile, setDisabled(await readUsersFile(usersFile), username, true));
    return { streamToken: tokens.refresh_token, revoke: disable };
  };
}
