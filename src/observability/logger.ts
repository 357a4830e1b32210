// One pino logger for the whole process. Secrets never reach it: request
// headers are not serialised at all, URLs are logged with every credential-like
// parameter masked (redact-url.ts), and redaction paths catch the rest as a
// second line of defence.
import type { IncomingHttpHeaders } from 'node:http';
import { pino, type DestinationStream, type Logger, type LoggerOptions } from 'pino';
import { compileClientAddress, type AddressedRequest, type ClientAddress, type PeerSocket } from '../http/client-address.js';
import type { Config } from '../config/schema.js';
import { REDACTED, redactUrl } from './redact-url.js';

export type { Logger } from 'pino';
export { REDACTED, redactUrl } from './redact-url.js';

/** Field names that hold a credential wherever they appear in a log object. */
export const REDACT_PATHS = [
  'password',
  '*.password',
  'access_token',
  '*.access_token',
  'refresh_token',
  '*.refresh_token',
  'apiKey',
  '*.apiKey',
  'token',
  '*.token',
  'secret',
  '*.secret',
  'req.headers.authorization',
  'req.headers.cookie',
  'req.headers["proxy-authorization"]',
  'res.headers["set-cookie"]',
];

/** A node:http request, or Fastify's (its node:http request is `raw`). */
interface SerializableRequest {
  id?: unknown;
  method?: string;
  url?: string;
  raw?: Partial<AddressedRequest>;
  socket?: PeerSocket | null;
  headers?: IncomingHttpHeaders;
}

/** The `req` serializer, with the client's address as `clientAddress` reads it (http/client-address.ts). */
export function requestSerializer(clientAddress: ClientAddress): (req: SerializableRequest) => Record<string, unknown> {
  return (req) => {
    const message = req.raw ?? req;
    const address = message.socket && message.headers ? clientAddress.of(message as AddressedRequest) : '';
    return {
      id: req.id,
      method: req.method,
      url: typeof req.url === 'string' ? redactUrl(req.url) : undefined,
      remoteAddress: address === '' ? undefined : address,
    };
  };
}

/**
 * A listener's logger: its `req` serializer reads the client address through
 * the gateway's trusted proxies. Without it (a logger on its own), the peer's
 * address is logged, unmapped the same way.
 */
export function withClientAddress(logger: Logger, clientAddress: ClientAddress): Logger {
  return logger.child({}, { serializers: { req: requestSerializer(clientAddress) } });
}

const serializers = {
  req: requestSerializer(compileClientAddress([])),
  res(res: { statusCode?: number }) {
    return { statusCode: res.statusCode };
  },
  err: pino.stdSerializers.err,
};

/** All the logger itself needs of the configuration. */
type LevelOnly = { log: Pick<Config['log'], 'level'> };

export function loggerOptions(config: LevelOnly): LoggerOptions {
  return {
    level: config.log.level,
    redact: { paths: REDACT_PATHS, censor: REDACTED },
    serializers,
    base: { service: 'gatehouse' },
  };
}

/**
 * Lines to stdout are batched: a write per line costs a system call on every
 * proxied request. They wait until a batch is full, or at most a second when
 * traffic is light, and the rest is flushed when the process exits. Batches
 * are written synchronously, pino's default: an asynchronous write is a
 * thread-pool round trip, which measured dearer than the write itself (about
 * 24 µs per request under load), and a stdout that cannot keep up holds the
 * process back instead of growing an unbounded buffer.
 */
const stdoutBatching = {
  sync: true,
  minLength: 3072,
  /**
   * PIPE_BUF: a write of at most this many bytes to a pipe is atomic, and a
   * batch holds whole lines only, so workers sharing one stdout never
   * interleave inside a line.
   */
  maxWrite: 4096,
  periodicFlush: 1000,
};

/** What the process's loggers write to: lines in, batched, flushed at exit. */
interface BatchedStdout extends DestinationStream {
  flushSync(): void;
}

let stdout: BatchedStdout | undefined;

/**
 * One batched stdout per process: loggers with buffers of their own would
 * reorder lines. Lines go into the batch as bytes: a string appended to a
 * batch of strings has sonic-boom measure the batch's last string again,
 * which flattens it (a copy of up to a batch, per line; about 0.6 µs of
 * every proxied request's CPU, measured); bytes are batched by length alone.
 */
function stdoutDestination(): BatchedStdout {
  if (stdout === undefined) {
    // The casts: pino's and sonic-boom's types know string content only, though sonic-boom takes bytes in `buffer` mode.
    const batch = pino.destination({ dest: 1, ...stdoutBatching, contentMode: 'buffer' } as Parameters<typeof pino.destination>[0]);
    const destination: BatchedStdout = {
      write: (line: string) => batch.write(Buffer.from(line) as unknown as string),
      flushSync: () => batch.flushSync(),
    };
    // pino flushes only asynchronous destinations at exit; this one is
    // synchronous but buffered, and its last lines (a shutdown's) matter.
    process.once('exit', () => {
      try {
        destination.flushSync();
      } catch {
        // stdout is gone (a closed pipe): there is nowhere left to write
      }
    });
    stdout = destination;
  }
  return stdout;
}

/** Without a destination: stdout, batched (above). */
export function createLogger(config: LevelOnly, destination?: DestinationStream): Logger {
  return pino(loggerOptions(config), destination ?? stdoutDestination());
}
