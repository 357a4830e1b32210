// The baseline: node:http + http-proxy with a keep-alive agent, no auth, no
// header policy, nothing else. What a hand-rolled proxy costs. With CERT_FILE
// and KEY_FILE, the same over node:https (HTTP/1.1): what TLS termination
// costs by itself (bench/tls.ts).
import { readFileSync } from 'node:fs';
import { Agent, createServer } from 'node:http';
import { createServer as createTlsServer } from 'node:https';
import httpProxy from 'http-proxy';

const target = process.env.TARGET;
const agent = new Agent({ keepAlive: true, maxSockets: 256 });
const proxy = httpProxy.createProxyServer({ target, agent });
proxy.on('error', (_error, _req, res) => {
  res.writeHead?.(502);
  res.end?.();
});
const handler = (req, res) => proxy.web(req, res);
const { CERT_FILE, KEY_FILE } = process.env;
const server = CERT_FILE && KEY_FILE ? createTlsServer({ cert: readFileSync(CERT_FILE), key: readFileSync(KEY_FILE) }, handler) : createServer(handler);
server.keepAliveTimeout = 60_000;
server.listen(0, '127.0.0.1', () => {
  process.stdout.write(`${JSON.stringify({ port: server.address().port })}\n`);
});
