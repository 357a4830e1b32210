// The commands `npm run test:container` drives: podman, podman-compose and the
// scripts, run as child processes with their output captured (and streamed,
// prefixed, for the long ones, so a slow build shows progress). A command that
// fails throws with its exit code and the tail of its output, unless the caller
// asks for the result to judge it itself.
import { spawn } from 'node:child_process';

export interface CommandResult {
  code: number;
  stdout: string;
  stderr: string;
}

export interface CommandOptions {
  /** Written to the command's stdin, which is then closed. */
  input?: string;
  /** Added to this process's environment. */
  env?: Record<string, string>;
  /** Print the output as it comes, each line prefixed (long commands). */
  stream?: boolean;
  /** Return a failing result instead of throwing. */
  allowFailure?: boolean;
}

const startedAt = Date.now();
const secrets: string[] = [];

/** Masks `value` in everything this module prints or throws (podman-compose echoes its commands, environment included). */
export function redact(value: string): void {
  secrets.push(value);
}

function masked(text: string): string {
  return secrets.reduce((result, secret) => result.split(secret).join('***'), text);
}

/** A progress line with the time since the run started. */
export function progress(message: string): void {
  const seconds = ((Date.now() - startedAt) / 1000).toFixed(0).padStart(4);
  process.stdout.write(`[container ${seconds}s] ${message}\n`);
}

export async function command(file: string, args: string[], options: CommandOptions = {}): Promise<CommandResult> {
  const child = spawn(file, args, { env: { ...process.env, ...options.env }, stdio: ['pipe', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  const prefix = `    ${file.split('/').pop()}| `;
  const show = (chunk: string) => {
    if (options.stream) process.stdout.write(masked(chunk).replace(/^(?=.)/gm, prefix));
  };
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
    stdout += chunk;
    show(chunk);
  });
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => {
    stderr += chunk;
    show(chunk);
  });
  child.stdin.on('error', () => undefined);
  child.stdin.end(options.input ?? '');
  const code = await new Promise<number>((resolve, reject) => {
    child.once('error', reject);
    child.once('close', (exitCode, signal) => resolve(exitCode ?? (signal === null ? 1 : 128)));
  });
  if (code !== 0 && !options.allowFailure) {
    const tail = `${stdout}\n${stderr}`.trim().split('\n').slice(-30).join('\n');
    throw new Error(masked(`${file} ${args.join(' ')} exited with ${code}:\n${tail}`));
  }
  return { code, stdout, stderr };
}

export function podman(args: string[], options?: CommandOptions): Promise<CommandResult> {
  return command('podman', args, options);
}

/** Polls `probe` every half second until it returns a value, or fails after `timeoutMs`. */
export async function waitFor<T>(what: string, timeoutMs: number, probe: () => Promise<T | undefined>): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let lastError: unknown;
  while (Date.now() < deadline) {
    try {
      const value = await probe();
      if (value !== undefined) return value;
    } catch (error) {
      lastError = error;
    }
    await new Promise((resolve) => setTimeout(resolve, 500));
  }
  throw new Error(`timed out after ${timeoutMs / 1000} s waiting for ${what}${lastError ? ` (last: ${String(lastError)})` : ''}`);
}
