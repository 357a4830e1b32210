// The simplest Node TLS proxy: node:https + http-proxy with a keep-alive
// agent, HTTP/1.1 only, no auth. What TLS termination costs by itself.
import { readFileSync } from 'node:fs';
import { Agent } from 'node:http';
import { createServer } from 'node:https';
import httpProxy from 'http-proxy';

const target = process.env.TARGET;
const agent = new Agent({ keepAlive: true, maxSockets: 256 });
const proxy = httpProxy.createProxyServer({ target, agent });
proxy.on('error', (_error, _req, res) => {
  res.writeHead?.(502);
  res.end?.();
});
const tls = { cert: readFileSync(process.env.CERT_FILE), key: readFileSync(process.env.KEY_FILE) };
const server = createServer(tls, (req, res) => proxy.web(req, res));
server.keepAliveTimeout = 60_000;
server.listen(0, '127.0.0.1', () => {
  process.stdout.write(`${JSON.stringify({ port: server.address().port })}\n`);
});
