// Long work shows progress: the measurement every benchmark section shares
// says it warms the rows up, prints a line as each measured run finishes,
// then says what it does next, so `npm run bench` is never silent for minutes.
import { createServer } from 'node:http';
import { once } from 'node:events';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { measure } from '../../bench/lib/measure.js';

const server = createServer((_req, res) => res.end('ok'));
beforeAll(async () => {
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
});
afterAll(() => {
  server.close();
});

describe('bench progress', () => {
  it('prints each measured run as it finishes, and what comes next', async () => {
    const lines: string[] = [];
    const write = vi.spyOn(process.stdout, 'write').mockImplementation((chunk: string | Uint8Array) => {
      lines.push(String(chunk));
      return true;
    });
    try {
      const { port } = server.address() as AddressInfo;
      const rows = await measure([{ name: 'tiny', url: `http://127.0.0.1:${port}/`, cpuMicros: () => process.cpuUsage().user }], {
        connections: 2,
        durationS: 1,
        rounds: 1,
        fixedRate: 0,
      });
      expect(rows.map((row) => row.name)).toEqual(['tiny']);
    } finally {
      write.mockRestore();
    }
    const progress = lines.filter((line) => line.startsWith('[bench]'));
    expect(progress[0]).toMatch(/^\[bench\] {3}warming up each row \(\d+ s\)\n$/);
    expect(progress[1]).toMatch(/^\[bench\] {3}round 1\/1 tiny: \d+ req\/s, \d+ µs CPU\/req\n$/);
    expect(progress[2]).toMatch(/^\[bench\] {3}latency runs \(c=1\), 1 rounds of 1 rows\n$/);
  });
});
