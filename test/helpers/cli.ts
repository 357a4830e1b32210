// Runs a `gatehouse` command or subcommand in process with string stdin and captured output.
import { PassThrough } from 'node:stream';
import { runCommandLine } from '../../src/cli/command-line.js';
import type { CliIo } from '../../src/cli/io.js';

export interface CliRun {
  code: number;
  stdout: string;
  stderr: string;
}

export async function runCommand(
  command: (args: string[], io: CliIo) => Promise<number>,
  args: string[],
  usersFile: string,
  stdin: string | CliIo['stdin'] = '',
): Promise<CliRun> {
  const [stdout, stderr] = [capture(), capture()];
  const code = await command(args, { usersFile, stdin: typeof stdin === 'string' ? text(stdin) : stdin, stdout: stdout.stream, stderr: stderr.stream });
  return { code, stdout: stdout.text(), stderr: stderr.text() };
}

/** `gatehouse …argv` as a shell would run it, with this environment (none of the test process's) and this stdin. */
export async function runGatehouse(argv: string[], env: NodeJS.ProcessEnv = {}, stdin = ''): Promise<CliRun> {
  const [stdout, stderr] = [capture(), capture()];
  const code = await runCommandLine(argv, { stdin: text(stdin), stdout: stdout.stream, stderr: stderr.stream, env });
  return { code, stdout: stdout.text(), stderr: stderr.text() };
}

function text(content: string): PassThrough {
  const stream = new PassThrough();
  stream.end(content);
  return stream;
}

/** A stream whose writes are kept; read back synchronously (a PassThrough buffers what is written to it). */
function capture(): { stream: PassThrough; text(): string } {
  const stream = new PassThrough();
  const chunks: Buffer[] = [];
  return {
    stream,
    text() {
      for (let chunk: Buffer | null; (chunk = stream.read() as Buffer | null) !== null;) chunks.push(chunk);
      return Buffer.concat(chunks).toString('utf8');
    },
  };
}
