// The Node floor: the simplest proxy node:http can be, a server that sends
// each request on through a keep-alive http.Agent and pipes both bodies, with
// no checks, no header policy, no log and no metric. What forwarding alone
// costs in Node; Gatehouse's authenticated hot path is measured against it.
import { Agent, createServer, request } from 'node:http';

const target = new URL(process.env.TARGET);
const agent = new Agent({ keepAlive: true, maxSockets: 256 });
const server = createServer((req, res) => {
  const upstream = request({ agent, host: target.hostname, port: target.port, method: req.method, path: req.url, headers: req.headers }, (answer) => {
    res.writeHead(answer.statusCode, answer.headers);
    answer.pipe(res);
  });
  upstream.on('error', () => {
    if (!res.headersSent) res.writeHead(502);
    res.end();
  });
  req.pipe(upstream);
});
server.keepAliveTimeout = 60_000;
server.listen(0, '127.0.0.1', () => {
  process.stdout.write(`${JSON.stringify({ port: server.address().port })}\n`);
});
