// A closed-loop load client in a process of its own, so it can be pinned to a
// CPU apart from the server it drives (taskset): `connections` kept-alive
// node:http connections, each sending its next request when the last is
// answered, for `durationS`. Prints one JSON line: requests, rps, p50Ms,
// p99Ms (µs resolution), errors.
//
//   node bench/lib/keepalive-client.mjs <url> <connections> <durationS> [headers as JSON]
import { Agent, request } from 'node:http';

const [url, connections, durationS, headersJson] = process.argv.slice(2);
const target = new URL(url);
const headers = headersJson ? JSON.parse(headersJson) : {};
const agent = new Agent({ keepAlive: true, maxSockets: Number(connections) });
const head = { host: target.hostname, port: target.port, path: `${target.pathname}${target.search}`, agent, headers };
const latencies = [];
let errors = 0;
const started = performance.now();
const until = started + Number(durationS) * 1000;
const one = () =>
  new Promise((resolve) => {
    const sent = performance.now();
    const req = request(head, (res) => {
      res.resume();
      res.once('end', () => {
        latencies.push(performance.now() - sent);
        if (res.statusCode >= 400) errors++;
        resolve();
      });
    });
    req.once('error', () => {
      errors++;
      resolve();
    });
    req.end();
  });
const worker = async () => {
  while (performance.now() < until) await one();
};
await Promise.all(Array.from({ length: Number(connections) }, worker));
const elapsedS = (performance.now() - started) / 1000;
agent.destroy();
latencies.sort((a, b) => a - b);
const at = (q) => latencies[Math.min(latencies.length - 1, Math.max(0, Math.ceil(q * latencies.length) - 1))] ?? Number.NaN;
process.stdout.write(`${JSON.stringify({ requests: latencies.length, rps: latencies.length / elapsedS, p50Ms: at(0.5), p99Ms: at(0.99), errors })}\n`);
