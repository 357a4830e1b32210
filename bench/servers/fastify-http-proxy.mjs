// A peer: Fastify with @fastify/http-proxy (reply-from on undici), no auth.
import proxy from '@fastify/http-proxy';
import Fastify from 'fastify';

const app = Fastify({ logger: false });
await app.register(proxy, { upstream: process.env.TARGET, http: undefined });
await app.listen({ host: '127.0.0.1', port: 0 });
process.stdout.write(`${JSON.stringify({ port: app.server.address().port })}\n`);
