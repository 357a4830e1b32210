// What holding an exchange for its session costs the proxy's hot path: one
// add and one remove in the session-holdings registry per admitted
// exchange, in CPU nanoseconds, for a session with another exchange open and
// for one otherwise idle (its group kept from its last request).
//
//   npx tsx bench/session-end.ts
//
// Figures, not assertions: docs/guides/session-end.md quotes them.
import { pathToFileURL } from 'node:url';
import { pino } from 'pino';
import type { Principal } from '../src/core/principal.js';
import { SessionHoldings, type Holding } from '../src/proxy/session-holdings.js';

const say = (line: string) => process.stdout.write(`[session-end] ${line}\n`);

/** CPU time of one add and one remove, as the proxy does per admitted exchange (a session with other exchanges open, and without). */
function measureRegistry(): void {
  const holdings = new SessionHoldings({
    sessions: { onSessionEnded: () => () => {} },
    identity: { isActive: () => true, onChange: () => () => {} },
    logger: pino({ level: 'silent' }),
  });
  const now = Date.now();
  const principal: Principal = {
    sub: 's',
    username: 'u',
    sid: 'sid-1',
    tokenType: 'Bearer',
    method: 'pwd',
    expiresAtMs: now + 3_600_000,
    sessionEndsAtMs: now + 86_400_000,
    roles: [],
    scopes: undefined,
    readOnly: false,
  };
  class Exchange implements Holding {
    readonly principal = principal;
    get kind(): 'http' {
      return 'http';
    }
    end(): void {}
  }
  const exchanges = Array.from({ length: 1024 }, () => new Exchange());
  const open = new Exchange();
  holdings.add(open, false); // the session is known (as after its first request)
  const rounds = 2_000_000;
  for (const [label, keepOpen] of [
    ['session with another exchange open', true],
    ['session otherwise idle', false],
  ] as const) {
    if (!keepOpen) holdings.remove(open);
    const started = process.cpuUsage();
    for (let i = 0; i < rounds; i++) {
      const exchange = exchanges[i & 1023]!;
      holdings.add(exchange, false);
      holdings.remove(exchange);
    }
    const used = process.cpuUsage(started);
    say(`registry add+remove (${label}): ${(((used.user + used.system) * 1000) / rounds).toFixed(0)} ns CPU per exchange`);
  }
  holdings.close();
}

export async function main(): Promise<void> {
  measureRegistry();
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) await main();
