// The benchmark's backend over TLS: the same ~100 bytes of JSON as
// upstream.mjs, from Node's HTTP/2 secure server with HTTP/1.1 allowed, so
// one process answers a gateway speaking either (ALPN decides). CERT_FILE and
// KEY_FILE name its PEM pair.
import { readFileSync } from 'node:fs';
import { createSecureServer } from 'node:http2';

const body = JSON.stringify({ ok: true, service: 'bench-upstream', padding: 'x'.repeat(48) });

const server = createSecureServer(
  { cert: readFileSync(process.env.CERT_FILE), key: readFileSync(process.env.KEY_FILE), allowHTTP1: true, settings: { maxConcurrentStreams: 1000 } },
  (req, res) => {
    res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
    res.end(body);
  },
);
server.listen(Number(process.env.PORT ?? 0), '127.0.0.1', () => {
  process.stdout.write(`${JSON.stringify({ port: server.address().port })}\n`);
});
