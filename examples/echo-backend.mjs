// A demo backend for the README: answers every request with what it received
// (method, path, and the identity headers Gatehouse added), and answers
// POST /jobs with 202 and a requestId, as an asynchronous operation would.
// With GATEHOUSE_STATUS_URL (the admin listener's /internal/v1/requests) and
// GATEHOUSE_SERVICE_TOKEN set, it then reports each job completed there, as a
// real backend reports how its work ended; it retries while the gateway does
// not know the id yet (404) or cannot keep the change (503).
import { randomUUID } from 'node:crypto';
import { createServer } from 'node:http';
import { setTimeout as sleep } from 'node:timers/promises';

const port = Number(process.env.PORT ?? 3000);
const statusUrl = process.env.GATEHOUSE_STATUS_URL;
const serviceToken = process.env.GATEHOUSE_SERVICE_TOKEN;

async function reportCompleted(requestId) {
  for (let attempt = 1; attempt <= 10; attempt += 1) {
    await sleep(500);
    try {
      const response = await fetch(`${statusUrl}/${requestId}/status`, {
        method: 'PUT',
        headers: { authorization: `Bearer ${serviceToken}`, 'content-type': 'application/json' },
        body: JSON.stringify({ status: 'completed' }),
      });
      process.stdout.write(`job ${requestId}: reported completed, answer ${response.status}\n`);
      if (response.status !== 404 && response.status < 500) return;
    } catch (error) {
      process.stdout.write(`job ${requestId}: report failed (${error.cause?.code ?? error.message}), retrying\n`);
    }
  }
}

const server = createServer((req, res) => {
  if (req.method === 'POST' && req.url === '/jobs') {
    const requestId = randomUUID();
    res.writeHead(202, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ requestId }));
    if (statusUrl && serviceToken) void reportCompleted(requestId);
    return;
  }
  const identity = Object.fromEntries(Object.entries(req.headers).filter(([name]) => name.startsWith('x-gatehouse-')));
  res.writeHead(200, { 'content-type': 'application/json' });
  res.end(JSON.stringify({ method: req.method, path: req.url, identity }));
}).listen(port, process.env.HOST ?? '127.0.0.1', () => process.stdout.write(`echo backend on port ${port}\n`));
// As PID 1 in a container nothing stops it on SIGTERM unless it says so.
process.once('SIGTERM', () => server.close(() => process.exit(0)));
