// Bytes through the gateway: large bodies stream both ways in bounded memory,
// hop-by-hop headers stop at the gateway in both directions, and messages
// without a body (HEAD, 204, 304) or with an unusual one (a chunked DELETE)
// keep their framing, so nothing hangs and nothing is smuggled.
import { Agent, request as httpRequest, type ClientRequest, type IncomingMessage, type ServerResponse } from 'node:http';
import { Readable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectDiagnoses, expectNoInternalErrors } from '../helpers/diagnoses.js';
import { startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { parseHead, rawConnection, send } from '../helpers/http-client.js';
import { Arrivals, echo, startUpstream, type EchoBody, type Upstream } from '../helpers/upstream.js';

const MiB = 1024 * 1024;
const TRANSFER_BYTES = 512 * MiB;
const CHUNK_BYTES = 64 * 1024;
const RSS_GROWTH_LIMIT = 96 * MiB;
/**
 * Only a bound on a hang: over half a gigabyte crosses loopback twice,
 * which takes seconds on a quiet machine and several times that on a busy one.
 */
const TRANSFER_TIMEOUT_MS = 90_000;
/** The response deadline of the routes that test it. */
const STRICT_TIMEOUT_MS = 1_000;

/** `total` bytes in fresh 64 KiB chunks, made as they are read (nothing is held). */
function generated(total: number): Readable {
  let left = total;
  return new Readable({
    read() {
      if (left === 0) {
        this.push(null);
        return;
      }
      const size = Math.min(CHUNK_BYTES, left);
      left -= size;
      this.push(Buffer.alloc(size, 0x61));
    },
  });
}

/** 256 MiB/s: 2 s for a 512 MiB transfer. */
const READ_BYTES_PER_MS = 256 * 1024;

/**
 * Counts what `stream` delivers, no faster than READ_BYTES_PER_MS: a reader
 * slower than the sender. Everything shares one event loop, where a reader
 * that keeps up would hide missing backpressure; against this one, only
 * backpressure through the gateway keeps the difference from piling up there
 * (a gateway that buffered instead grew by 150–300 MiB when tried).
 */
function countSlowly(stream: Readable, onChunk: (bytes: number) => void): void {
  const started = performance.now();
  let bytes = 0;
  stream.on('data', (chunk: Buffer) => {
    onChunk(chunk.length);
    bytes += chunk.length;
    const ahead = bytes / READ_BYTES_PER_MS - (performance.now() - started);
    if (ahead < 1) return;
    stream.pause();
    setTimeout(() => stream.resume(), ahead);
  });
}

/** Uploads to the routes with a short response deadline, as the upstream sees them. */
const strictUploads = new Arrivals();

/** Upstream side of the transfers: counts an upload, or generates a download. */
function transfers(req: IncomingMessage, res: ServerResponse): void {
  if (req.method === 'POST') {
    if (req.url?.startsWith('/strict/')) strictUploads.record(req, res);
    let bytes = 0;
    countSlowly(req, (n) => (bytes += n));
    req.on('end', () => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ bytes, framing: req.headers['transfer-encoding'] ?? `content-length ${req.headers['content-length']}` }));
    });
    return;
  }
  const total = Number(new URL(req.url ?? '/', 'http://x').searchParams.get('bytes'));
  res.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': String(total) });
  generated(total).pipe(res);
}

/**
 * RSS growth over a transfer, sampled every 50 ms. The gateway, the upstream
 * and the client all run in this one process (the test worker), so this is
 * their memory together: a bound on it bounds the gateway's.
 */
async function rssGrowthDuring<T>(work: () => Promise<T>): Promise<{ result: T; growth: number }> {
  const baseline = process.memoryUsage().rss;
  let peak = baseline;
  const sampler = setInterval(() => (peak = Math.max(peak, process.memoryUsage().rss)), 50);
  try {
    const result = await work();
    peak = Math.max(peak, process.memoryUsage().rss);
    return { result, growth: peak - baseline };
  } finally {
    clearInterval(sampler);
  }
}

function upload(url: string, total: number): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    // No Content-Length: Node sends the body chunked.
    const req = httpRequest(url, { method: 'POST', agent: false, headers: { 'content-type': 'application/octet-stream' } }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString() }));
      res.on('error', reject);
    });
    req.on('error', reject);
    generated(total).pipe(req);
  });
}

function download(url: string): Promise<{ status: number; contentLength: string | undefined; bytes: number }> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(url, { agent: false }, (res) => {
      let bytes = 0;
      countSlowly(res, (n) => (bytes += n));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, contentLength: res.headers['content-length'], bytes }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end();
  });
}

let bulk: Upstream;
/** Never answers. */
let holding: Upstream;
let echoing: Upstream;
let special: Upstream;
let gw: TestGateway;

/** Answers without a body where HTTP says there is none, and with hop-by-hop headers to strip. */
function specialHandler(req: IncomingMessage, res: ServerResponse): void {
  const path = new URL(req.url ?? '/', 'http://x').pathname;
  if (path.endsWith('/no-content')) {
    res.writeHead(204, { 'x-kind': 'no-content' });
    res.end();
  } else if (path.endsWith('/not-modified')) {
    res.writeHead(304, { etag: '"v1"', 'x-kind': 'not-modified' });
    res.end();
  } else if (path.endsWith('/hop-by-hop')) {
    res.setHeader('connection', 'keep-alive, X-Bar');
    res.setHeader('x-bar', 'for-the-gateway-only');
    res.setHeader('keep-alive', 'timeout=77, max=9');
    res.setHeader('proxy-authenticate', 'Basic realm="upstream"');
    res.setHeader('proxy-connection', 'keep-alive');
    res.setHeader('trailer', 'x-checksum');
    res.setHeader('set-cookie', ['a=1; Path=/', 'b=2; HttpOnly; Secure', 'c=3; Expires=Wed, 21 Oct 2037 07:28:00 GMT']);
    res.setHeader('x-kept', 'yes');
    res.writeHead(200, { 'content-type': 'text/plain' });
    res.end('body');
  } else {
    // HEAD (and GET) of a representation of 1234 bytes.
    res.writeHead(200, { 'content-type': 'text/plain', 'content-length': '1234' });
    res.end(req.method === 'HEAD' ? undefined : Buffer.alloc(1234, 0x62));
  }
}

beforeAll(async () => {
  [bulk, holding, echoing, special] = await Promise.all([
    startUpstream(transfers),
    startUpstream(() => {}),
    startUpstream(echo),
    startUpstream(specialHandler),
  ]);
  gw = await startTestGateway({
    config: {
      routes: [
        { name: 'bulk', prefix: '/bulk', upstreams: [bulk.url], auth: 'none' },
        { name: 'strict', prefix: '/strict', upstreams: [bulk.url], auth: 'none', responseTimeoutMs: STRICT_TIMEOUT_MS },
        // The same deadline in front of an upstream that never answers: its 504 shows that much time has passed.
        { name: 'strict-silent', prefix: '/strict-silent', upstreams: [holding.url], auth: 'none', responseTimeoutMs: STRICT_TIMEOUT_MS },
        { name: 'echo', prefix: '/echo', upstreams: [echoing.url], auth: 'none' },
        { name: 'special', prefix: '/special', upstreams: [special.url], auth: 'none' },
      ],
    },
  });
});

afterAll(async () => {
  expectNoInternalErrors(gw.logs);
  await gw?.close();
  await Promise.all([bulk?.close(), holding?.close(), echoing?.close(), special?.close()]);
});

describe('streaming with bounded memory', () => {
  // Each starts with a smaller transfer: the first megabytes through a fresh
  // process grow V8's heap and the allocator's arenas to their working size,
  // which is not what is measured here.
  it(
    'streams a 512 MiB chunked upload to the upstream with exact byte count and bounded RSS growth',
    async () => {
      await upload(`${gw.url}/bulk/warm-up`, 64 * MiB);
      const { result, growth } = await rssGrowthDuring(() => upload(`${gw.url}/bulk/upload`, TRANSFER_BYTES));
      expect(result.status).toBe(200);
      expect(JSON.parse(result.body)).toEqual({ bytes: TRANSFER_BYTES, framing: 'chunked' });
      expect(growth).toBeLessThan(RSS_GROWTH_LIMIT);
    },
    TRANSFER_TIMEOUT_MS,
  );

  it(
    'streams a 512 MiB content-length download to the client with exact byte count and bounded RSS growth',
    async () => {
      await download(`${gw.url}/bulk/download?bytes=${64 * MiB}`);
      const { result, growth } = await rssGrowthDuring(() => download(`${gw.url}/bulk/download?bytes=${TRANSFER_BYTES}`));
      expect(result).toEqual({ status: 200, contentLength: String(TRANSFER_BYTES), bytes: TRANSFER_BYTES });
      expect(growth).toBeLessThan(RSS_GROWTH_LIMIT);
    },
    TRANSFER_TIMEOUT_MS,
  );
});

describe('uploads and the response deadline', () => {
  const UPLOAD_CHUNK = Buffer.alloc(16 * 1024, 0x64);

  /** A chunked upload the test writes by hand; `response` settles with the gateway's answer. */
  function startUpload(path: string): { req: ClientRequest; response: Promise<{ status: number; body: string }> } {
    const req = httpRequest(`${gw.url}${path}`, { method: 'POST', agent: false, headers: { 'content-type': 'application/octet-stream' } });
    const response = new Promise<{ status: number; body: string }>((resolve, reject) => {
      req.on('response', (res) => {
        const parts: Buffer[] = [];
        res.on('data', (chunk: Buffer) => parts.push(chunk));
        res.on('end', () => {
          req.destroy();
          resolve({ status: res.statusCode ?? 0, body: Buffer.concat(parts).toString() });
        });
      });
      req.on('error', reject);
    });
    return { req, response };
  }

  it('does not cut an upload that keeps flowing for longer than the response timeout', async () => {
    const upload = startUpload('/strict/drip');
    let sent = 0;
    const send16k = () => {
      upload.req.write(UPLOAD_CHUNK);
      sent += UPLOAD_CHUNK.length;
    };
    send16k();
    await (
      await strictUploads.of('/strict/drip')
    ).firstBytes;
    // The upload's deadline is running. A request with the same deadline sent
    // now answers 504 only once that much time has passed; meanwhile the
    // upload keeps flowing, a chunk at a time, well within the deadline.
    const drip = setInterval(send16k, STRICT_TIMEOUT_MS / 10);
    try {
      const silent = await send(`${gw.url}/strict-silent/x`);
      expect(silent.status).toBe(504);
    } finally {
      clearInterval(drip);
    }
    upload.req.end();
    const result = await upload.response;
    expect(result.status).toBe(200);
    expect(JSON.parse(result.body)).toEqual({ bytes: sent, framing: 'chunked' });
  });

  it('answers 504 once an upload stalls for the response timeout, and aborts the upstream request', async () => {
    const upload = startUpload('/strict/stall');
    upload.req.write(UPLOAD_CHUNK);
    upload.req.write(UPLOAD_CHUNK);
    const result = await upload.response;
    expectDiagnoses(result.status, result.body, 504, '504 (Gateway Timeout) - temporarily_unavailable: upstream timed out');
    const upstreamSaw = await strictUploads.of('/strict/stall');
    await upstreamSaw.gone;
    expect(upstreamSaw.ended).toBe(false);
  });
});

describe('hop-by-hop headers', () => {
  it("stops the client's and the upstream's hop-by-hop headers at the gateway and keeps every Set-Cookie", async () => {
    const echoed = await send(`${gw.url}/echo/hop`, {
      headers: {
        connection: 'close, X-Foo',
        'x-foo': 'for-the-gateway-only',
        'keep-alive': 'timeout=99',
        te: 'trailers',
        'proxy-connection': 'keep-alive',
        'x-kept': 'yes',
      },
    });
    expect(echoed.status).toBe(200);
    const upstreamSaw = (JSON.parse(echoed.body.toString()) as EchoBody).headers;
    expect(upstreamSaw['x-kept']).toBe('yes');
    for (const name of ['x-foo', 'keep-alive', 'te', 'proxy-connection']) expect(upstreamSaw[name], name).toBeUndefined();
    // Node's agent sets its own; the client's value (and what it nominated) stopped at the gateway.
    expect(upstreamSaw.connection).toBe('keep-alive');

    const response = await send(`${gw.url}/special/hop-by-hop`);
    expect(response.status).toBe(200);
    expect(response.body.toString()).toBe('body');
    expect(response.headers['x-kept']).toBe('yes');
    for (const name of ['x-bar', 'proxy-authenticate', 'proxy-connection', 'trailer']) expect(response.headers[name], name).toBeUndefined();
    // The gateway's own connection management, not the upstream's.
    expect(response.headers.connection).not.toMatch(/x-bar/i);
    expect(response.headers['keep-alive']).not.toBe('timeout=77, max=9');
    expect(response.headers['set-cookie']).toEqual(['a=1; Path=/', 'b=2; HttpOnly; Secure', 'c=3; Expires=Wed, 21 Oct 2037 07:28:00 GMT']);
    expect(response.rawHeaders.filter((_, i) => i % 2 === 0 && response.rawHeaders[i]!.toLowerCase() === 'set-cookie')).toHaveLength(3);
  });
});

describe('message framing', () => {
  it('passes HEAD, 204 and 304 responses through with no body and no hang, on one kept-alive connection', async () => {
    const agent = new Agent({ keepAlive: true, maxSockets: 1 });
    try {
      const head = await send(`${gw.url}/special/file`, { method: 'HEAD', agent, timeoutMs: 2_000 });
      expect(head.status).toBe(200);
      expect(head.headers['content-length']).toBe('1234');
      expect(head.body).toHaveLength(0);

      const noContent = await send(`${gw.url}/special/no-content`, { method: 'PUT', body: 'x', agent, timeoutMs: 2_000 });
      expect(noContent.status).toBe(204);
      expect(noContent.headers['x-kind']).toBe('no-content');
      expect(noContent.body).toHaveLength(0);
      expect(noContent.reusedSocket).toBe(true);

      const notModified = await send(`${gw.url}/special/not-modified`, { headers: { 'if-none-match': '"v1"' }, agent, timeoutMs: 2_000 });
      expect(notModified.status).toBe(304);
      expect(notModified.headers.etag).toBe('"v1"');
      expect(notModified.body).toHaveLength(0);
      expect(notModified.reusedSocket).toBe(true);

      // Had any of them carried a stray body, this response would be garbled or lost.
      const after = await send(`${gw.url}/special/file`, { agent, timeoutMs: 2_000 });
      expect(after.status).toBe(200);
      expect(after.body).toEqual(Buffer.alloc(1234, 0x62));
      expect(after.reusedSocket).toBe(true);
    } finally {
      agent.destroy();
    }
    // And none of them was cut short: each completed.
    const completed = gw.logs.entries().filter((entry) => entry.kind === 'proxy' && String(entry.url).startsWith('/special/'));
    expect(completed.map((entry) => [entry.status, entry.completed])).toEqual(
      expect.arrayContaining([
        [200, true],
        [204, true],
        [304, true],
      ]),
    );
  });

  it.each([['DELETE'], ['OPTIONS']])('forwards a chunked %s with a body as one request (no request smuggling)', async (method) => {
    // A body that is itself a request: sent unframed, the upstream would read it as a second one.
    const smuggled = `GET /echo/smuggled-by-${method} HTTP/1.1\r\nhost: upstream\r\ncontent-length: 0\r\n\r\n`;
    const before = echoing.seen.length;
    const conn = await rawConnection(gw.url);
    const size = Buffer.byteLength(smuggled).toString(16);
    conn.socket.write(
      `${method} /echo/resource HTTP/1.1\r\nhost: gw\r\ntransfer-encoding: chunked\r\nconnection: close\r\n\r\n${size}\r\n${smuggled}\r\n0\r\n\r\n`,
    );
    const data = await conn.closed;
    const head = parseHead(data);
    expect(head.status).toBe(200);
    const body = head.headers.get('transfer-encoding')?.[0] === 'chunked' ? dechunk(head.rest) : head.rest;
    expect(JSON.parse(body.toString())).toMatchObject({ method, url: '/echo/resource', body: smuggled });
    // One more request on the gateway's kept-alive upstream connection: a smuggled one would be seen before it.
    expect((await send(`${gw.url}/echo/after`)).status).toBe(200);
    expect(echoing.seen.slice(before).map((seen) => `${seen.method} ${seen.url}`)).toEqual([`${method} /echo/resource`, 'GET /echo/after']);
  });
});

function dechunk(raw: Buffer): Buffer {
  const out: Buffer[] = [];
  let rest = raw;
  for (;;) {
    const lineEnd = rest.indexOf('\r\n');
    const size = parseInt(rest.subarray(0, lineEnd).toString('latin1'), 16);
    if (!size) return Buffer.concat(out);
    out.push(rest.subarray(lineEnd + 2, lineEnd + 2 + size));
    rest = rest.subarray(lineEnd + 2 + size + 2);
  }
}
