// The front door on its own: a plain node:http server on port 0 asks it about each request and
// answers 200 to what it lets through. Its collaborators are real where they are small (the abuse
// guard, the fair hashing queue, the client address reading, with 127.0.0.1 a trusted proxy so each
// test names its client in X-Forwarded-For) and fakes of one or two readings where they are not (the
// load shedder's levels, the token cache's answer, the shed-requests counter). Holds are 0 ms: a
// refusal still goes through the guard's hold (its `held` event), without a test waiting on a clock.
import { Agent, createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { PassThrough } from 'node:stream';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { compileClientAddress } from '../../src/http/client-address.js';
import { AbuseGuard } from '../../src/limits/abuse-guard.js';
import { FairWorkQueue } from '../../src/limits/fair-work-queue.js';
import { FrontDoor, type FrontDoorOptions } from '../../src/server/front-door.js';
import { expectDiagnoses } from '../helpers/diagnoses.js';
import { send, type ClientResponse } from '../helpers/http-client.js';

const CACHED_TOKEN = 'Bearer cached';

let server: Server;
let url: string;
let abuse: AbuseGuard;
let hashing: FairWorkQueue;
let load: { shedsUnauthenticated: boolean; shedsAll: boolean; retryAfterS: number };
let shed: ReturnType<typeof vi.fn>;
let door: FrontDoor;
/** Ends the password check that keeps the hashing queue busy, when a test started one. */
let releaseHashing: (() => void) | undefined;

beforeEach(async () => {
  abuse = new AbuseGuard({
    suspectAfterStrikes: 2,
    holdAfterStrikes: 3,
    refuseAfterStrikes: 4,
    strikeWindowMs: 60_000,
    refuseForMs: 30_000,
    holdMs: 0,
    maxHeld: 100,
    maxAddresses: 100,
    trustForS: 3_600,
  });
  hashing = new FairWorkQueue({ concurrency: 1, maxQueue: 1, maxQueuePerAddress: 1, retryAfterS: 7 }, (address) => abuse.laneOf(address));
  load = { shedsUnauthenticated: false, shedsAll: false, retryAfterS: 3 };
  shed = vi.fn();
  door = new FrontDoor({
    abuse,
    passwordHashing: hashing,
    load,
    bearer: { admitsFromMemory: (headers) => headers.authorization === CACHED_TOKEN },
    metrics: { shedRequests: { inc: shed } } as unknown as FrontDoorOptions['metrics'],
    clientAddress: compileClientAddress(['127.0.0.1']),
  });
  server = createServer((req, res) => {
    if (door.refuses(req, res)) return;
    req.resume();
    res.end('served');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterEach(async () => {
  releaseHashing?.();
  releaseHashing = undefined;
  abuse.close();
  await new Promise((resolve) => server.close(resolve));
});

function from(address: string, path = '/orders/7', options: { method?: string; authorization?: string; body?: string } = {}): Promise<ClientResponse> {
  const headers: Record<string, string> = { 'x-forwarded-for': address };
  if (options.authorization !== undefined) headers.authorization = options.authorization;
  if (options.body !== undefined) headers['content-type'] = 'application/json';
  return send(`${url}${path}`, { method: options.method ?? 'GET', headers, body: options.body });
}

function strike(address: string, times: number): void {
  for (let i = 0; i < times; i++) abuse.strike(address);
}

/** Sends on a keep-alive connection (without one, the client asks for the connection to close whatever the answer). */
async function keptAlive(request: (agent: Agent) => Promise<ClientResponse>): Promise<ClientResponse> {
  const agent = new Agent({ keepAlive: true });
  try {
    return await request(agent);
  } finally {
    agent.destroy();
  }
}

/** A password check that holds the queue's one slot until the test ends, and `waiting` one check queued behind it. */
function busyHashing(waiting?: string): void {
  void hashing.run('192.0.2.250', () => new Promise<void>((resolve) => (releaseHashing = resolve)));
  if (waiting !== undefined) void hashing.run(waiting, async () => {});
}

describe('FrontDoor: addresses refused at the head', () => {
  it('serves a clean address', async () => {
    const answer = await from('192.0.2.1');
    expect([answer.status, answer.body.toString()]).toEqual([200, 'served']);
  });

  it('answers an address the abuse guard refuses with 429 and the rest of its refusal as Retry-After', async () => {
    strike('192.0.2.1', 4);
    const answer = await from('192.0.2.1');
    expectDiagnoses(answer.status, answer.body, 429, /too many refused requests from this address$/);
    expect(answer.headers['retry-after']).toBe('30');
  });

  it('refuses only the address refused: another one is served', async () => {
    strike('192.0.2.1', 4);
    expect((await from('192.0.2.2')).status).toBe(200);
  });

  it('lets through a refused address whose bearer token was admitted before', async () => {
    strike('192.0.2.1', 4);
    expect((await from('192.0.2.1', '/orders/7', { authorization: CACHED_TOKEN })).status).toBe(200);
  });

  it('counts each refusal at the head as a strike, so a flood that goes on stays refused', async () => {
    strike('192.0.2.1', 4);
    const struck = vi.spyOn(abuse, 'strike');
    await from('192.0.2.1');
    expect(struck).toHaveBeenCalledWith('192.0.2.1');
  });

  it('holds a refusal in the abuse guard before it answers it', async () => {
    strike('192.0.2.1', 4);
    const held: string[] = [];
    abuse.on('held', (address) => held.push(address));
    expect((await from('192.0.2.1')).status).toBe(429);
    expect(held).toEqual(['192.0.2.1']);
  });

  it('answers on the OAuth endpoints in the OAuth error format, not to be cached', async () => {
    strike('192.0.2.1', 4);
    const answer = await from('192.0.2.1', '/oauth/token', { method: 'POST', body: 'grant_type=password' });
    expect(answer.status).toBe(429);
    expect(JSON.parse(answer.body.toString())).toEqual({ error: 'slow_down', error_description: 'too many refused requests from this address' });
    expect([answer.headers['cache-control'], answer.headers['content-length']]).toEqual(['no-store', String(answer.body.length)]);
  });

  it('closes the connection after refusing a request whose body it did not read', async () => {
    strike('192.0.2.1', 4);
    const body = new PassThrough();
    body.write('{"username":');
    const answer = await keptAlive((agent) =>
      send(`${url}/api/v1/auth/login`, {
        method: 'POST',
        headers: { 'x-forwarded-for': '192.0.2.1', 'content-type': 'application/json', 'content-length': '100' },
        body,
        agent,
      }),
    );
    expect([answer.status, answer.headers.connection]).toEqual([429, 'close']);
  });

  it('keeps the connection of a refused request without a body', async () => {
    strike('192.0.2.1', 4);
    const answer = await keptAlive((agent) => send(`${url}/orders/7`, { headers: { 'x-forwarded-for': '192.0.2.1' }, agent }));
    expect([answer.status, answer.headers.connection]).toEqual([429, 'keep-alive']);
  });
});

describe('FrontDoor: load shedding', () => {
  beforeEach(() => {
    load.shedsUnauthenticated = true;
  });

  it('answers a bearer token not verified before with 503 overloaded and the shedder’s Retry-After, counted, and no strike', async () => {
    const struck = vi.spyOn(abuse, 'strike');
    const answer = await from('192.0.2.1', '/orders/7', { authorization: 'Bearer never-seen' });
    expectDiagnoses(answer.status, answer.body, 503, /overloaded/);
    expect(answer.headers['retry-after']).toBe('3');
    expect(shed).toHaveBeenCalledWith({ level: 'unauthenticated' });
    expect(struck).not.toHaveBeenCalled();
  });

  it('holds a shed refusal in the abuse guard, as the others are, before it answers it', async () => {
    const held: string[] = [];
    abuse.on('held', (address) => held.push(address));
    expect((await from('192.0.2.1', '/orders/7', { authorization: 'Bearer never-seen' })).status).toBe(503);
    expect(held).toEqual(['192.0.2.1']);
  });

  it('serves a request without credentials and one with a token admitted before', async () => {
    expect((await from('192.0.2.1')).status).toBe(200);
    expect((await from('192.0.2.1', '/orders/7', { authorization: CACHED_TOKEN })).status).toBe(200);
  });

  it.each(['/api/v1/auth/login', '/api/v1/auth/refresh', '/oauth/token'])('sheds a POST to %s from an address without a recent success', async (path) => {
    expect((await from('192.0.2.1', path, { method: 'POST', body: '{}' })).status).toBe(503);
  });

  it('serves the login of an address with a recent success', async () => {
    abuse.cleared('192.0.2.1');
    expect((await from('192.0.2.1', '/api/v1/auth/login', { method: 'POST', body: '{}' })).status).toBe(200);
  });

  it('sheds every request, cached tokens included, while the loop is later still', async () => {
    load.shedsAll = true;
    const answer = await from('192.0.2.1', '/orders/7', { authorization: CACHED_TOKEN });
    expectDiagnoses(answer.status, answer.body, 503, /overloaded/);
    expect(shed).toHaveBeenCalledWith({ level: 'all' });
  });
});

describe('FrontDoor: the suspects’ lane of the hashing queue', () => {
  it("answers a suspect's login with the queue's 503 and Retry-After when the suspects' lane is full, and strikes it", async () => {
    strike('192.0.2.1', 2);
    busyHashing('192.0.2.1');
    const struck = vi.spyOn(abuse, 'strike');
    const answer = await from('192.0.2.1', '/api/v1/auth/login', { method: 'POST', body: '{}' });
    expectDiagnoses(answer.status, answer.body, 503, /too many logins waiting$/);
    expect(answer.headers['retry-after']).toBe('7');
    expect(struck).toHaveBeenCalledWith('192.0.2.1');
  });

  it("serves a clean address's login while the queue is full: the queue itself decides", async () => {
    busyHashing('192.0.2.2');
    expect((await from('192.0.2.2', '/api/v1/auth/login', { method: 'POST', body: '{}' })).status).toBe(200);
  });

  it("serves a suspect's request that is not a login", async () => {
    strike('192.0.2.1', 2);
    busyHashing('192.0.2.1');
    expect((await from('192.0.2.1', '/orders/7', { method: 'POST', body: '{}' })).status).toBe(200);
  });
});

describe('FrontDoor.active', () => {
  it('is false while no address is refused and no load is shed', () => {
    expect(door.active).toBe(false);
  });

  it('is true while an address is refused at the head', () => {
    strike('192.0.2.1', 4);
    expect(door.active).toBe(true);
  });

  it('is true while load is shed', () => {
    load.shedsUnauthenticated = true;
    expect(door.active).toBe(true);
  });
});
