// Real HTTP servers on port 0 to stand behind the gateway in tests.
import { EventEmitter, once } from 'node:events';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface Upstream {
  server: Server;
  url: string;
  port: number;
  /** Every request seen, in order. */
  seen: Array<{ method: string; url: string; headers: IncomingMessage['headers'] }>;
  close(): Promise<void>;
}

export type Handler = (req: IncomingMessage, res: ServerResponse) => void;

/** An upstream answering every request with what it received, as JSON. */
export const echo: Handler = (req, res) => {
  const chunks: Buffer[] = [];
  req.on('data', (chunk: Buffer) => chunks.push(chunk));
  req.on('end', () => {
    const body = Buffer.concat(chunks).toString('utf8');
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ method: req.method, url: req.url, headers: req.headers, body }));
  });
};

export async function startUpstream(handler: Handler = echo): Promise<Upstream> {
  const seen: Upstream['seen'] = [];
  const server = createServer((req, res) => {
    seen.push({ method: req.method ?? '', url: req.url ?? '', headers: req.headers });
    handler(req, res);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    server,
    url: `http://127.0.0.1:${port}`,
    port,
    seen,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

export interface EchoBody {
  method: string;
  url: string;
  headers: Record<string, string | string[] | undefined>;
  body: string;
}

/** What an upstream saw of one request, with the moments a test awaits. */
export interface Arrival {
  url: string;
  /** Body bytes received so far. */
  bytes: number;
  /** The whole body arrived. */
  ended: boolean;
  /** Its connection went away before it was answered. */
  abandoned: boolean;
  /** Resolves when the first body bytes arrive. */
  firstBytes: Promise<void>;
  /** Resolves when its connection goes away before it was answered (the gateway let go of it). */
  gone: Promise<void>;
}

/**
 * Records the requests an upstream receives, by URL, so that a test can await
 * a request's arrival and what becomes of it instead of polling or sleeping.
 */
export class Arrivals {
  readonly #byUrl = new Map<string, Arrival>();
  readonly #events = new EventEmitter();

  /** Call from a handler, before it reads the body. */
  record(req: IncomingMessage, res: ServerResponse): Arrival {
    let sawBytes!: () => void;
    let wentAway!: () => void;
    const entry: Arrival = {
      url: req.url ?? '',
      bytes: 0,
      ended: false,
      abandoned: false,
      firstBytes: new Promise((resolve) => (sawBytes = resolve)),
      gone: new Promise((resolve) => (wentAway = resolve)),
    };
    req.on('data', (chunk: Buffer) => {
      entry.bytes += chunk.length;
      sawBytes();
    });
    req.on('end', () => (entry.ended = true));
    res.on('close', () => {
      if (res.writableFinished) return;
      entry.abandoned = true;
      wentAway();
    });
    this.#byUrl.set(entry.url, entry);
    this.#events.emit(entry.url, entry);
    return entry;
  }

  /** The request for `url` (the latest, if it came more than once), once the upstream has it. */
  async of(url: string): Promise<Arrival> {
    const arrived = this.#byUrl.get(url);
    if (arrived) return arrived;
    const [entry] = (await once(this.#events, url)) as [Arrival];
    return entry;
  }

  /** A handler that records each request, reads its body and never answers. */
  readonly hold: Handler = (req, res) => {
    this.record(req, res);
  };
}
