// nginx as a peer when it is installed: one worker, proxy_pass with upstream
// keep-alive, no access log. Skipped with a note otherwise.
import { execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, mkdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from '../../test/helpers/ports.js';
import { own, processCpuMicros, stopProcess, type ServerProcess } from './processes.js';

export function hasNginx(): boolean {
  try {
    execFileSync('nginx', ['-v'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

export async function startNginx(upstreamPort: number): Promise<ServerProcess> {
  const dir = mkdtempSync(join(tmpdir(), 'gatehouse-nginx-'));
  mkdirSync(join(dir, 'logs'));
  const port = await freePort();
  writeFileSync(
    join(dir, 'nginx.conf'),
    `worker_processes 1;
master_process off;
pid ${dir}/nginx.pid;
error_log ${dir}/logs/error.log warn;
events { worker_connections 4096; }
http {
  access_log off;
  client_body_temp_path ${dir}/body;
  proxy_temp_path ${dir}/proxy;
  fastcgi_temp_path ${dir}/fastcgi;
  uwsgi_temp_path ${dir}/uwsgi;
  scgi_temp_path ${dir}/scgi;
  upstream backend { server 127.0.0.1:${upstreamPort}; keepalive 64; }
  server {
    listen 127.0.0.1:${port};
    location / {
      proxy_pass http://backend;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
    }
  }
}
`,
  );
  const child = own(spawn('nginx', ['-p', dir, '-c', join(dir, 'nginx.conf'), '-g', 'daemon off;'], { stdio: 'ignore' }));
  const url = `http://127.0.0.1:${port}`;
  for (let i = 0; i < 100; i++) {
    if (
      await fetch(url).then(
        () => true,
        () => false,
      )
    )
      break;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  return { name: 'nginx', port, url, child, cpuMicros: () => processCpuMicros(child.pid!), stop: () => stopProcess(child) };
}
