// A loopback port where a TCP connect neither succeeds nor fails: a listening
// socket whose accept queue is full. The kernel (tcp_abort_on_overflow = 0,
// the default) drops further SYNs, so a client sits in SYN_SENT as it would
// towards a black-holed address, without any packet leaving the machine.
//
// The listener lives in a worker thread whose event loop is then blocked, so
// nothing ever accepts; a few filler connections fill the queue.
import { connect, type Socket } from 'node:net';
import { Worker } from 'node:worker_threads';

export interface FullBacklog {
  port: number;
  url: string;
  close(): Promise<void>;
}

const LISTENER = `
const { parentPort, workerData } = require('node:worker_threads');
const server = require('node:net').createServer();
server.listen({ host: '127.0.0.1', port: 0, backlog: 1 }, () => {
  parentPort.postMessage(server.address().port);
  Atomics.wait(workerData, 0, 0);
  server.close();
});
`;

function connects(socket: Socket, withinMs: number): Promise<boolean> {
  return new Promise((resolve) => {
    const timer = setTimeout(() => resolve(false), withinMs);
    socket.once('connect', () => {
      clearTimeout(timer);
      resolve(true);
    });
  });
}

export async function fullBacklog(): Promise<FullBacklog> {
  const signal = new Int32Array(new SharedArrayBuffer(4));
  const worker = new Worker(LISTENER, { eval: true, workerData: signal });
  const port = await new Promise<number>((resolve, reject) => {
    worker.once('message', resolve);
    worker.once('error', reject);
  });
  const fillers: Socket[] = [];
  const release = async () => {
    for (const socket of fillers) socket.destroy();
    Atomics.store(signal, 0, 1);
    Atomics.notify(signal, 0);
    await new Promise((resolve) => worker.once('exit', resolve));
  };
  // Fill the queue until a connect hangs: that one proves the port black-holes.
  for (;;) {
    const socket = connect(port, '127.0.0.1');
    socket.on('error', () => {});
    fillers.push(socket);
    if (!(await connects(socket, 150))) break;
    if (fillers.length > 32) {
      await release();
      throw new Error('the accept queue never filled up');
    }
  }
  return { port, url: `http://127.0.0.1:${port}`, close: release };
}
