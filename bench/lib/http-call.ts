// One HTTP request on a keep-alive agent, its whole answer read, bounded in
// time: a request that gets no answer is an error of the run, not a hang.
import { request, type Agent, type IncomingHttpHeaders } from 'node:http';

export interface CallOptions {
  method?: string;
  headers?: Record<string, string>;
  body?: string;
  timeoutMs: number;
}

export interface CallAnswer {
  status: number;
  headers: IncomingHttpHeaders;
  body: string;
  /** From the send to the end of the body. */
  ms: number;
}

export function call(agent: Agent, url: string, options: CallOptions): Promise<CallAnswer> {
  const started = performance.now();
  return new Promise((resolve, reject) => {
    const req = request(url, { method: options.method ?? 'GET', headers: options.headers, agent }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (body += chunk));
      res.on('error', reject);
      res.on('end', () => {
        clearTimeout(timer);
        resolve({ status: res.statusCode ?? 0, headers: res.headers, body, ms: performance.now() - started });
      });
    });
    const timer = setTimeout(() => req.destroy(new Error(`${options.method ?? 'GET'} ${url}: no answer within ${options.timeoutMs} ms`)), options.timeoutMs);
    req.on('error', (error) => {
      clearTimeout(timer);
      reject(error);
    });
    req.end(options.body);
  });
}
