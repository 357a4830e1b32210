// The HTTP/2 floor: the least a Node proxy can do over h2, a node:http2
// secure server that sends each request on through a keep-alive http.Agent
// and pipes both bodies, with no checks, no log and no metric.
import { readFileSync } from 'node:fs';
import { Agent, request } from 'node:http';
import { createSecureServer } from 'node:http2';

const target = new URL(process.env.TARGET);
const agent = new Agent({ keepAlive: true, maxSockets: 256 });
const server = createSecureServer({ cert: readFileSync(process.env.CERT_FILE), key: readFileSync(process.env.KEY_FILE) }, (req, res) => {
  const headers = { accept: req.headers.accept ?? '*/*', host: target.host };
  const upstream = request({ agent, host: target.hostname, port: target.port, method: req.method, path: req.url, headers }, (answer) => {
    res.writeHead(answer.statusCode, { 'content-type': answer.headers['content-type'] ?? 'application/octet-stream' });
    answer.pipe(res);
  });
  upstream.on('error', () => {
    if (!res.headersSent) res.writeHead(502);
    res.end();
  });
  req.pipe(upstream);
});
server.listen(0, '127.0.0.1', () => {
  process.stdout.write(`${JSON.stringify({ port: server.address().port })}\n`);
});
