// The benchmark's backend: answers every request with ~100 bytes of JSON,
// and 202 + a requestId for /jobs (the async capture benchmark).
import { randomUUID } from 'node:crypto';
import { createServer } from 'node:http';

const body = JSON.stringify({ ok: true, service: 'bench-upstream', padding: 'x'.repeat(48) });
const server = createServer((req, res) => {
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
