// Requests exactly as written: fetch and URL would normalise the path (dot
// segments, encodings) before it ever reached the gateway.
import { connect } from 'node:net';

export interface RawResponse {
  status: number;
  headers: Record<string, string>;
  body: string;
}

export async function rawRequest(url: string, requestLines: string[], body = ''): Promise<RawResponse> {
  const { hostname, port } = new URL(url);
  const lines = requestLines.some((line) => /^host:/i.test(line)) ? requestLines : [...requestLines, `host: ${hostname}:${port}`];
  const payload = `${lines.join('\r\n')}\r\nconnection: close\r\ncontent-length: ${Buffer.byteLength(body)}\r\n\r\n${body}`;
  return new Promise((resolve, reject) => {
    const socket = connect(Number(port), hostname, () => socket.write(payload));
    const chunks: Buffer[] = [];
    socket.on('data', (chunk: Buffer) => chunks.push(chunk));
    socket.on('error', reject);
    socket.on('end', () => {
      const text = Buffer.concat(chunks).toString('utf8');
      const [head = '', ...rest] = text.split('\r\n\r\n');
      const { status, headers } = parseResponseHead(head);
      const raw = rest.join('\r\n\r\n');
      const body = headers['transfer-encoding'] === 'chunked' ? dechunk(raw) : raw;
      resolve({ status, headers, body });
    });
  });
}

export function dechunk(raw: string): string {
  let out = '';
  let rest = raw;
  for (;;) {
    const lineEnd = rest.indexOf('\r\n');
    const size = parseInt(rest.slice(0, lineEnd), 16);
    if (!size) return out;
    out += rest.slice(lineEnd + 2, lineEnd + 2 + size);
    rest = rest.slice(lineEnd + 2 + size + 2);
  }
}

/** The status and headers (names lower-cased) of a response head, without its blank line. */
export function parseResponseHead(head: string): { status: number; headers: Record<string, string> } {
  const [statusLine = '', ...headerLines] = head.split('\r\n');
  const headers: Record<string, string> = {};
  for (const line of headerLines) {
    const colon = line.indexOf(':');
    headers[line.slice(0, colon).toLowerCase()] = line.slice(colon + 1).trim();
  }
  return { status: Number(statusLine.split(' ')[1]), headers };
}
