// A trace collector that accepts every OTLP/HTTP export and keeps nothing:
// what the "tracing on" row exports to, so the row pays for making and
// sending spans and not for a collector's work.
import { createServer } from 'node:http';

const server = createServer((req, res) => {
  req.resume();
  req.on('end', () => {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end('{}');
  });
});
server.keepAliveTimeout = 60_000;
server.listen(0, '127.0.0.1', () => {
  process.stdout.write(`${JSON.stringify({ port: server.address().port })}\n`);
});
