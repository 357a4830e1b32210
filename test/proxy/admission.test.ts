// Admission on its own: the route table is real (compiled from route configs), the client address
// reading is real, and the bearer check, route limits, route guard, header policy and abuse memory
// are fakes of the few methods admission calls, so each test says what admission asks of them and
// what it does with the answer: the record it fills, what it refuses, and when a refused token is a
// strike whose 401 is held.
import type { IncomingMessage } from 'node:http';
import { describe, expect, it, vi } from 'vitest';
import type { BearerAuthenticator } from '../../src/auth/bearer-authenticator.js';
import { RouteSchema, type RouteConfig } from '../../src/config/schema.js';
import { gatehouseError, type GatehouseError } from '../../src/core/errors.js';
import type { Principal } from '../../src/core/principal.js';
import { compileClientAddress } from '../../src/http/client-address.js';
import type { RouteLimits } from '../../src/limits/route-limits.js';
import { Admission, type Admitted, type AdmissionOptions } from '../../src/proxy/admission.js';
import type { RouteGuard } from '../../src/proxy/plug-ins.js';
import type { ProxyRoutes } from '../../src/proxy/proxy-routes.js';
import type { HeaderPolicy } from '../../src/proxy/upstream-headers.js';
import { RouteTable } from '../../src/routing/route-table.js';

const ALICE: Principal = {
  sub: 'u-alice',
  username: 'alice',
  sid: 's-1',
  tokenType: 'Bearer',
  method: 'pwd',
  expiresAtMs: Date.now() + 60_000,
  sessionEndsAtMs: Date.now() + 3_600_000,
  roles: [],
  scopes: undefined,
  readOnly: false,
};
const CLIENT = '192.0.2.7';

function route(fields: { prefix: string } & Partial<Omit<RouteConfig, 'prefix'>>): RouteConfig {
  return RouteSchema.parse({ upstreams: ['http://127.0.0.1:1'], ...fields });
}

/** What admission reads of a routes snapshot: its table (the pools are the forwarding's). */
function routesOf(...configs: RouteConfig[]): ProxyRoutes {
  return { table: RouteTable.compile(configs) } as unknown as ProxyRoutes;
}

const ROUTES = routesOf(
  route({ prefix: '/orders', name: 'orders', rewritePrefix: '/v2/orders' }),
  route({ prefix: '/limited', name: 'limited', rateLimit: { points: 1, durationS: 60 } }),
  route({ prefix: '/public', name: 'public', auth: 'none' }),
  route({ prefix: '/open-limited', name: 'open-limited', auth: 'none', rateLimit: { points: 1, durationS: 60 } }),
  route({ prefix: '/bound', name: 'bound', requireDpop: true }),
  route({ prefix: '/', name: 'everything-else', strictPaths: false }),
);

function request(url: string, method = 'GET'): IncomingMessage {
  return { method, url, headers: { host: 'gateway.test' }, socket: { remoteAddress: CLIENT } } as unknown as IncomingMessage;
}

/** A bearer check answering from memory (a principal, or a thrown refusal) or after a store look-up (a promise). */
function bearerAnswering(answer: () => Principal | Promise<Principal>) {
  return { authenticateRequest: vi.fn<(req: IncomingMessage, token?: string, boundOnly?: boolean) => Principal | Promise<Principal>>(answer) };
}

function abuseMemory(holds: boolean) {
  const held: Array<() => void> = [];
  return {
    held,
    strike: vi.fn<(address: string) => void>(),
    holdsRefusals: vi.fn<(address: string) => boolean>(() => holds),
    hold: vi.fn((_address: string, answer: () => void) => void held.push(answer)),
  };
}

function admission(options: Partial<Omit<AdmissionOptions, 'bearer'>> & { bearer?: ReturnType<typeof bearerAnswering> } = {}): Admission {
  return new Admission({
    routes: () => ROUTES,
    headers: {} as HeaderPolicy,
    clientAddress: compileClientAddress([]),
    ...options,
    bearer: (options.bearer ?? bearerAnswering(() => ALICE)) as unknown as BearerAuthenticator,
  });
}

/** Admits synchronously or after the promise admission returns; the record, or the refusal. */
async function admitted(gate: Admission, req: IncomingMessage, token?: string): Promise<Admitted> {
  const record: Admitted = {};
  await gate.admit(req, record, token);
  return record;
}

async function refusal(work: () => Promise<unknown> | undefined): Promise<GatehouseError> {
  try {
    await work();
  } catch (error) {
    return error as GatehouseError;
  }
  throw new Error('admitted, where a refusal was expected');
}

const limitsTaking = () => ({ take: vi.fn<RouteLimits['take']>(async () => {}) });
const badToken = () => gatehouseError('invalid_bearer_token');

describe('Admission.admit', () => {
  it('fills the record with the routes, the route, the rewritten path with its query and the principal, synchronously for a token checked before', () => {
    const record: Admitted = {};
    expect(admission().admit(request('/orders/7?x=1'), record)).toBeUndefined();
    expect(record).toEqual({ routes: ROUTES, route: expect.objectContaining({ name: 'orders' }), upstreamPath: '/v2/orders/7?x=1', principal: ALICE });
  });

  it('refuses a path no route serves before the bearer check is asked', async () => {
    const bearer = bearerAnswering(() => ALICE);
    const gate = admission({ routes: () => routesOf(route({ prefix: '/orders' })), bearer });
    expect((await refusal(() => gate.admit(request('/elsewhere'), {}))).code).toBe('route_not_found');
    expect(bearer.authenticateRequest).not.toHaveBeenCalled();
  });

  it('refuses a gateway endpoint reached by a proxied path trick, before the bearer check is asked', async () => {
    const bearer = bearerAnswering(() => ALICE);
    const error = await refusal(() => admission({ bearer }).admit(request('//api/v1/auth/login', 'POST'), {}));
    expect([error.code, error.reason]).toEqual(['invalid_request', 'path is not in canonical form']);
    expect(bearer.authenticateRequest).not.toHaveBeenCalled();
  });

  it('admits anyone to an auth: none route without a bearer check, with a null principal', async () => {
    const bearer = bearerAnswering(() => ALICE);
    expect((await admitted(admission({ bearer }), request('/public/x'))).principal).toBeNull();
    expect(bearer.authenticateRequest).not.toHaveBeenCalled();
  });

  it("hands the bearer check the token that came another way and the route's DPoP requirement", async () => {
    const bearer = bearerAnswering(() => ALICE);
    await admitted(admission({ bearer }), request('/bound/x'), 'from-a-subprotocol');
    expect(bearer.authenticateRequest).toHaveBeenCalledWith(expect.anything(), 'from-a-subprotocol', true);
  });

  it('refuses synchronously what the bearer check refuses from memory, and leaves the abuse memory alone', () => {
    const abuse = abuseMemory(true);
    const gate = admission({
      abuse,
      bearer: bearerAnswering(() => {
        throw badToken();
      }),
    });
    expect(() => gate.admit(request('/orders/7'), {})).toThrow(expect.objectContaining({ code: 'invalid_bearer_token' }));
    expect(abuse.strike).not.toHaveBeenCalled();
  });

  it('waits for a bearer check that asks the store, and records its principal', async () => {
    const gate = admission({ bearer: bearerAnswering(async () => ALICE) });
    const record: Admitted = {};
    const pending = gate.admit(request('/orders/7'), record);
    expect(pending).toBeInstanceOf(Promise);
    await pending;
    expect(record.principal).toBe(ALICE);
  });

  it('keeps the routes the request was matched against when a reload lands while its token is checked', async () => {
    let current = ROUTES;
    let answer!: (principal: Principal) => void;
    const gate = admission({ routes: () => current, bearer: bearerAnswering(() => new Promise((resolve) => (answer = resolve))) });
    const record: Admitted = {};
    const pending = gate.admit(request('/orders/7'), record);
    current = routesOf(route({ prefix: '/orders', name: 'reloaded' }));
    answer(ALICE);
    await pending;
    expect([record.routes, record.route?.name]).toEqual([ROUTES, 'orders']);
  });
});

describe('route rules and limits', () => {
  it("asks the route's rule with the route, the method and the principal, and refuses what it refuses", () => {
    const check = vi.fn<RouteGuard['check']>(() => {
      throw gatehouseError('insufficient_scope');
    });
    const req = request('/orders/7', 'DELETE');
    expect(() => admission({ authorization: { check } }).admit(req, {})).toThrow(expect.objectContaining({ code: 'insufficient_scope' }));
    expect(check).toHaveBeenCalledWith(expect.objectContaining({ name: 'orders' }), 'DELETE', ALICE, req);
  });

  it("asks the route's rule after a bearer check that asked the store too", async () => {
    const check = vi.fn<RouteGuard['check']>(() => {
      throw gatehouseError('insufficient_scope');
    });
    const gate = admission({ authorization: { check }, bearer: bearerAnswering(async () => ALICE) });
    expect((await refusal(() => gate.admit(request('/orders/7'), {}))).code).toBe('insufficient_scope');
  });

  it("counts a limited route's requests per subject for a bearer route", async () => {
    const limits = limitsTaking();
    await admitted(admission({ limits: limits as unknown as RouteLimits }), request('/limited/x'));
    expect(limits.take).toHaveBeenCalledWith(expect.objectContaining({ name: 'limited' }), { points: 1, durationS: 60 }, 'sub:u-alice');
  });

  it("counts a limited public route's requests per client address", async () => {
    const limits = limitsTaking();
    await admitted(admission({ limits: limits as unknown as RouteLimits }), request('/open-limited/x'));
    expect(limits.take).toHaveBeenCalledWith(expect.objectContaining({ name: 'open-limited' }), { points: 1, durationS: 60 }, `address:${CLIENT}`);
  });

  it('refuses what the route limit refuses', async () => {
    const limits = { take: vi.fn(async () => Promise.reject(gatehouseError('too_many_requests'))) };
    expect((await refusal(() => admission({ limits: limits as unknown as RouteLimits }).admit(request('/limited/x'), {}))).code).toBe('too_many_requests');
  });

  it('leaves a route without a limit synchronous: the limits are not asked', () => {
    const limits = limitsTaking();
    expect(admission({ limits: limits as unknown as RouteLimits }).admit(request('/orders/7'), {})).toBeUndefined();
    expect(limits.take).not.toHaveBeenCalled();
  });
});

describe('refused tokens and the abuse memory', () => {
  it.each(['invalid_bearer_token', 'invalid_dpop_proof'] as const)(
    'counts a %s refused by a first check as a strike against the client address',
    async (code) => {
      const abuse = abuseMemory(false);
      const gate = admission({ abuse, bearer: bearerAnswering(async () => Promise.reject(gatehouseError(code))) });
      expect((await refusal(() => gate.admit(request('/orders/7'), {}))).code).toBe(code);
      expect(abuse.strike).toHaveBeenCalledWith(CLIENT);
      expect(abuse.hold).not.toHaveBeenCalled();
    },
  );

  it('holds the 401 of an address that keeps sending bad tokens until the abuse memory answers it', async () => {
    const abuse = abuseMemory(true);
    const gate = admission({ abuse, bearer: bearerAnswering(async () => Promise.reject(badToken())) });
    let settled = false;
    const pending = gate.admit(request('/orders/7'), {})!.catch((error: GatehouseError) => {
      settled = true;
      return error;
    });
    await vi.waitFor(() => expect(abuse.held).toHaveLength(1));
    expect(settled).toBe(false);
    abuse.held[0]!();
    expect(((await pending) as GatehouseError).code).toBe('invalid_bearer_token');
    expect(abuse.hold).toHaveBeenCalledWith(CLIENT, expect.any(Function));
  });

  it('counts no strike for a refusal that is not the token’s fault', async () => {
    const abuse = abuseMemory(true);
    const gate = admission({ abuse, bearer: bearerAnswering(async () => Promise.reject(gatehouseError('store_unavailable'))) });
    expect((await refusal(() => gate.admit(request('/orders/7'), {}))).code).toBe('store_unavailable');
    expect([abuse.strike.mock.calls.length, abuse.hold.mock.calls.length]).toEqual([0, 0]);
  });
});

describe('Admission.allows and upstreamHeaders', () => {
  it("says whether the route's rule still lets the principal use the method", () => {
    const [orders] = ROUTES.table.routes;
    const check = vi.fn<RouteGuard['check']>((_route, method) => {
      if (method === 'DELETE') throw gatehouseError('insufficient_scope');
    });
    const gate = admission({ authorization: { check } });
    expect([gate.allows(orders!, 'GET', ALICE, request('/orders/7')), gate.allows(orders!, 'DELETE', ALICE, request('/orders/7'))]).toEqual([true, false]);
  });

  it("asks the header policy with the route's forwarding settings, the principal and the request id", () => {
    const requestHeaders = vi.fn(() => ({ 'x-built': '1' }));
    const gate = admission({ headers: { requestHeaders } as unknown as HeaderPolicy });
    const record: Admitted = {};
    const req = request('/orders/7');
    gate.admit(req, record);
    expect(gate.upstreamHeaders(req, record, 'req-1')).toEqual({ 'x-built': '1' });
    expect(requestHeaders).toHaveBeenCalledWith(req, {
      forwardAuthorization: false,
      principal: ALICE,
      requestId: 'req-1',
      host: 'gateway.test',
      assertion: undefined,
      routeName: 'orders',
    });
  });
});
