// The benchmark's backend: answers every request with ~100 bytes of JSON,
// 202 + a requestId for /jobs (the async capture benchmark), bulk bodies
// for the streaming memory benchmark, and an endless event stream at /events
// (the session-end benchmark: the gateway ends it when its session ends).
import { randomUUID } from 'node:crypto';
import { createServer } from 'node:http';

const body = JSON.stringify({ ok: true, service: 'bench-upstream', padding: 'x'.repeat(48) });
const chunk = Buffer.alloc(64 * 1024, 0x61);

const server = createServer((req, res) => {
  // Streaming benchmarks: POST /bulk counts what it receives; GET /bulk?bytes=N sends N bytes.
  if (req.url.startsWith('/bulk')) {
    if (req.method === 'POST') {
      let received = 0;
      req.on('data', (data) => (received += data.length));
      req.on('end', () => res.end(JSON.stringify({ received })));
      return;
    }
    let left = Number(new URL(req.url, 'http://x').searchParams.get('bytes') ?? 0);
    res.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': left });
    const pump = () => {
      while (left > 0) {
        const piece = left >= chunk.length ? chunk : chunk.subarray(0, left);
        left -= piece.length;
        if (!res.write(piece)) return void res.once('drain', pump);
      }
      res.end();
    };
    pump();
    return;
  }
  if (req.url.startsWith('/events')) {
    res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-store' });
    res.write(': open\n\n');
    let n = 0;
    const tick = setInterval(() => res.write(`data: ${n++}\n\n`), 100);
    res.once('close', () => clearInterval(tick));
    return;
  }
  if (req.url.startsWith('/jobs')) {
    res.writeHead(202, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ requestId: randomUUID() }));
    return;
  }
  res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
  res.end(body);
});
server.keepAliveTimeout = 60_000;
server.listen(Number(process.env.PORT ?? 0), '127.0.0.1', () => {
  process.stdout.write(`${JSON.stringify({ port: server.address().port })}\n`);
});
