// A gateway whose password hashing is a gate the test holds: what completes
// while it is held waited for no hashing, and the order in which held checks
// are let through shows whose turn the hashing queue gave. Clients name their
// address in X-Forwarded-For (loopback is the trusted proxy in front).
import { EventEmitter } from 'node:events';
import { verifyPassword } from '../../src/users/passwords.js';
import { postJson, startTestGateway, type TestGateway } from './gateway.js';
import { startUpstream, type Upstream } from './upstream.js';

export interface HeldCheck {
  password: string;
  release(): void;
}

/** A password check that waits until the test releases it, then answers as scrypt would. */
export class HashingGate extends EventEmitter<{ entered: [HeldCheck] }> {
  readonly held: HeldCheck[] = [];

  readonly verify = async (password: string, encoded: string): Promise<boolean> => {
    let release!: () => void;
    const opened = new Promise<void>((resolve) => (release = resolve));
    const check = { password, release };
    this.held.push(check);
    this.emit('entered', check);
    await opened;
    return verifyPassword(password, encoded);
  };
}

export interface GatedGateway {
  gw: TestGateway;
  upstream: Upstream;
  gate: HashingGate;
  /** A password (or API key) login from `address`. */
  loginFrom(address: string, username: string, password: string): Promise<Response>;
  /** Every held check released, then the gateway and the upstream closed. */
  close(): Promise<void>;
}

/** A test gateway with a route `/orders`, its hashing held by a gate, with these `limits.passwordHashing`. */
export async function startGatedGateway(passwordHashing: Record<string, number>): Promise<GatedGateway> {
  const gate = new HashingGate();
  const upstream = await startUpstream();
  const gw = await startTestGateway({
    verifyPassword: gate.verify,
    config: {
      server: { trustedProxies: ['127.0.0.1'] },
      limits: { passwordHashing },
      routes: [{ name: 'orders', prefix: '/orders', upstreams: [upstream.url] }],
    },
  });
  return {
    gw,
    upstream,
    gate,
    loginFrom: (address, username, password) => postJson(`${gw.url}/api/v1/auth/login`, { username, password }, { 'x-forwarded-for': address }),
    close: async () => {
      for (const check of gate.held) check.release();
      await gw.close();
      await upstream.close();
    },
  };
}
