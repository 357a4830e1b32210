// A real HTTP server on port 0 standing in for an OpenTelemetry collector: it keeps every OTLP/HTTP JSON post
// (traces, logs) as sent, and tells when one arrives at a path.
import { EventEmitter, once } from 'node:events';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface OtlpPost {
  url: string;
  contentType: string;
  text: string;
}

export interface OtlpCollector {
  /** The server's base URL, e.g. http://127.0.0.1:PORT. */
  url: string;
  posts: OtlpPost[];
  /** The parsed bodies posted at `path` (`/v1/traces`, `/v1/logs`). */
  bodies<T>(path: string): T[];
  /** Resolves once a post at `path` has arrived (at once when one already has). */
  received(path: string): Promise<void>;
  close(): void;
}

export async function startOtlpCollector(): Promise<OtlpCollector> {
  const arrivals = new EventEmitter();
  const posts: OtlpPost[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      posts.push({ url: req.url ?? '', contentType: String(req.headers['content-type']), text: Buffer.concat(chunks).toString('utf8') });
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
      arrivals.emit(req.url ?? '');
    });
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    posts,
    bodies: <T>(path: string) => posts.filter((post) => post.url === path).map((post) => JSON.parse(post.text) as T),
    received: (path) => (posts.some((post) => post.url === path) ? Promise.resolve() : once(arrivals, path).then(() => undefined)),
    close: () => server.close(),
  };
}
