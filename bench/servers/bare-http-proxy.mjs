// The baseline: node:http + http-proxy with a keep-alive agent, no auth, no
// header policy, nothing else. What a hand-rolled proxy costs.
import { Agent, createServer } from 'node:http';
import httpProxy from 'http-proxy';

const target = process.env.TARGET;
const agent = new Agent({ keepAlive: true, maxSockets: 256 });
const proxy = httpProxy.createProxyServer({ target, agent });
proxy.on('error', (_error, _req, res) => {
  res.writeHead?.(502);
  res.end?.();
});
const server = createServer((req, res) => proxy.web(req, res));
server.keepAliveTimeout = 60_000;
server.listen(0, '127.0.0.1', () => {
  process.stdout.write(`${JSON.stringify({ port: server.address().port })}\n`);
});
