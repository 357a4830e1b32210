// One HTTP exchange with exactly the bytes given (no header added, none
// merged), for requests rawRequest cannot express: chunked bodies, trailers,
// a Connection header of the test's own.
import { connect } from 'node:net';
import { dechunk, parseResponseHead, type RawResponse } from './raw-http.js';

/** Sends `head` lines (the blank line is added) and `body` as is; the server must close or answer with a length. */
export function rawExchange(url: string, head: string[], body = ''): Promise<RawResponse> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve, reject) => {
    const socket = connect(Number(port), hostname, () => socket.write(`${head.join('\r\n')}\r\n\r\n${body}`));
    let text = '';
    const timer = setTimeout(() => {
      socket.destroy();
      reject(new Error(`no complete answer in time: ${JSON.stringify(text)}`));
    }, 5_000);
    const done = (force: boolean) => {
      const end = text.indexOf('\r\n\r\n');
      if (end === -1) return;
      const { status, headers } = parseResponseHead(text.slice(0, end));
      let payload = text.slice(end + 4);
      if (headers['transfer-encoding'] === 'chunked') {
        if (!payload.endsWith('0\r\n\r\n') && !force) return;
        payload = dechunk(payload);
      } else if (!force && !(Buffer.byteLength(payload) >= Number(headers['content-length'] ?? NaN))) {
        return;
      }
      clearTimeout(timer);
      socket.destroy();
      resolve({ status, headers, body: payload });
    };
    socket.on('data', (chunk: Buffer) => {
      text += chunk.toString('utf8');
      done(false);
    });
    socket.on('end', () => done(true));
    socket.on('error', (error) => {
      clearTimeout(timer);
      reject(error);
    });
  });
}
