// Runs a `gatehouse` subcommand in process with string stdin and captured output.
import { PassThrough } from 'node:stream';
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
  let input = stdin;
  if (typeof stdin === 'string') {
    const text = new PassThrough();
    text.end(stdin);
    input = text;
  }
  const stdout = new PassThrough();
  const stderr = new PassThrough();
  const out: Buffer[] = [];
  const err: Buffer[] = [];
  stdout.on('data', (chunk: Buffer) => out.push(chunk));
  stderr.on('data', (chunk: Buffer) => err.push(chunk));
  const code = await command(args, { usersFile, stdin: input as CliIo['stdin'], stdout, stderr });
  return { code, stdout: Buffer.concat(out).toString('utf8'), stderr: Buffer.concat(err).toString('utf8') };
}
