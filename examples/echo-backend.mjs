// A demo backend for the README: answers every request with what it received
// (method, path, and the identity headers Gatehouse added), and answers
// POST /jobs with 202 and a requestId, as an asynchronous operation would.
import { randomUUID } from 'node:crypto';
import { createServer } from 'node:http';

const port = Number(process.env.PORT ?? 3000);
createServer((req, res) => {
  if (req.method === 'POST' && req.url === '/jobs') {
    res.writeHead(202, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ requestId: randomUUID() }));
    return;
  }
  const identity = Object.fromEntries(Object.entries(req.headers).filter(([name]) => name.startsWith('x-gatehouse-')));
  res.writeHead(200, { 'content-type': 'application/json' });
  res.end(JSON.stringify({ method: req.method, path: req.url, identity }));
}).listen(port, process.env.HOST ?? '127.0.0.1', () => process.stdout.write(`echo backend on port ${port}\n`));
