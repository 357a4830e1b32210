// What the `gatehouse users …` and `gatehouse apikeys …` commands need from
// the outside world, passed in rather than taken from `process`, so tests run
// them in-process with plain streams. Also the few I/O helpers they share.
import { UsersChangeError, UsersFileError } from '../identity/users-file.js';

export interface CliIo {
  /** The users file the commands read and replace. */
  usersFile: string;
  stdin: NodeJS.ReadableStream & { isTTY?: boolean };
  stdout: NodeJS.WritableStream;
  stderr: NodeJS.WritableStream;
}

/** Wrong command line: answered with the usage text and exit code 2. */
export class UsageError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'UsageError';
  }
}

/** A refusal the operator can act on (password too short, cancelled prompt…): exit code 1. */
export class CliError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'CliError';
  }
}

export const EXIT_OK = 0;
export const EXIT_FAILURE = 1;
export const EXIT_USAGE = 2;

/**
 * Runs one command and turns its outcome into an exit code: usage errors
 * (including those of node:util parseArgs) print the usage text and give 2,
 * every other error prints its message alone and gives 1. Never a stack trace.
 */
export async function runCli(usage: string, io: CliIo, command: () => Promise<number>): Promise<number> {
  try {
    return await command();
  } catch (error) {
    if (error instanceof UsageError || isParseArgsError(error)) {
      writeLine(io.stderr, `gatehouse: ${(error as Error).message}`);
      writeLine(io.stderr, usage);
      return EXIT_USAGE;
    }
    if (error instanceof UsersChangeError || error instanceof UsersFileError || error instanceof CliError) {
      writeLine(io.stderr, `gatehouse: ${error.message}`);
      return EXIT_FAILURE;
    }
    writeLine(io.stderr, `gatehouse: ${error instanceof Error ? error.message : String(error)}`);
    return EXIT_FAILURE;
  }
}

export type Subcommand = (args: string[], io: CliIo) => Promise<number>;

/**
 * Runs `gatehouse <group> <command> …`: the named subcommand, the usage for
 * help, a usage error for anything else; all through runCli.
 */
export function dispatch(group: string, usage: string, subcommands: Record<string, Subcommand>, args: string[], io: CliIo): Promise<number> {
  return runCli(usage, io, async () => {
    const [command, ...rest] = args;
    if (command === undefined) throw new UsageError('missing command');
    if (command === 'help' || command === '--help' || command === '-h') {
      writeLine(io.stdout, usage);
      return EXIT_OK;
    }
    const subcommand = Object.hasOwn(subcommands, command) ? subcommands[command] : undefined;
    if (!subcommand) throw new UsageError(`unknown command: ${group} ${command}`);
    return subcommand(rest, io);
  });
}

function isParseArgsError(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' && code.startsWith('ERR_PARSE_ARGS_');
}

/** The one positional argument a command takes (NAME, USER, KEYID). */
export function singlePositional(positionals: readonly string[], name: string): string {
  if (positionals.length === 0) throw new UsageError(`missing ${name}`);
  if (positionals.length > 1) throw new UsageError(`unexpected argument: ${positionals[1]}`);
  return positionals[0]!;
}

export function writeLine(stream: NodeJS.WritableStream, text: string): void {
  stream.write(`${text}\n`);
}

/** Left-aligned columns separated by two spaces; the last column is not padded. */
export function formatTable(rows: readonly (readonly string[])[]): string {
  const widths: number[] = [];
  for (const row of rows) row.forEach((cell, i) => (widths[i] = Math.max(widths[i] ?? 0, cell.length)));
  return rows
    .map((row) => row.map((cell, i) => (i === row.length - 1 ? cell : cell.padEnd(widths[i]!))).join('  '))
    .join('\n');
}

/** Control characters in operator-given text (labels) would break the table or drive the terminal. */
export function printable(text: string): string {
  return text.replace(/[\u0000-\u001f\u007f-\u009f]/g, ' ');
}

/** The whole of stdin as UTF-8 text. */
export async function readAll(stream: NodeJS.ReadableStream): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of stream) chunks.push(typeof chunk === 'string' ? Buffer.from(chunk, 'utf8') : chunk);
  return Buffer.concat(chunks).toString('utf8');
}

type RawModeStream = NodeJS.ReadableStream & { isTTY?: boolean; setRawMode(mode: boolean): unknown };

/** True when stdin is a terminal whose echo can be switched off. */
export function canPromptHidden(stream: CliIo['stdin']): stream is RawModeStream {
  return stream.isTTY === true && typeof (stream as Partial<RawModeStream>).setRawMode === 'function';
}

/**
 * Asks each prompt in turn on stderr (stdout may be a pipe) and reads one line
 * per prompt with the terminal's echo off: raw mode, so nothing typed is shown
 * and this code handles Enter, Backspace, Ctrl-C and Ctrl-D itself.
 */
export function promptHidden(io: CliIo, prompts: readonly string[]): Promise<string[]> {
  const stdin = io.stdin;
  if (!canPromptHidden(stdin)) return Promise.reject(new CliError('stdin is not a terminal: cannot prompt'));
  const answers: string[] = [];
  let current = '';
  let afterCarriageReturn = false;

  return new Promise((resolve, reject) => {
    const finish = (error?: Error): void => {
      stdin.removeListener('data', onData);
      stdin.removeListener('end', onEnd);
      stdin.setRawMode(false);
      stdin.pause();
      if (error) reject(error);
      else resolve(answers);
    };
    const onData = (chunk: string | Buffer): void => {
      for (const char of typeof chunk === 'string' ? chunk : chunk.toString('utf8')) {
        // A pasted "\r\n" is one Enter, not an Enter and an empty answer.
        const skip = char === '\n' && afterCarriageReturn;
        afterCarriageReturn = char === '\r';
        if (skip) continue;
        if (char === '\r' || char === '\n') {
          io.stderr.write('\n');
          answers.push(current);
          current = '';
          if (answers.length === prompts.length) return finish();
          io.stderr.write(prompts[answers.length]!);
        } else if (char === '\u0003' || (char === '\u0004' && current === '')) {
          io.stderr.write('\n');
          return finish(new CliError('cancelled'));
        } else if (char === '\u007f' || char === '\b') {
          current = Array.from(current).slice(0, -1).join('');
        } else if (char >= ' ') {
          current += char;
        }
      }
    };
    const onEnd = (): void => finish(new CliError('stdin closed before the answer was complete'));

    stdin.setEncoding('utf8');
    stdin.setRawMode(true);
    stdin.on('data', onData);
    stdin.on('end', onEnd);
    io.stderr.write(prompts[0] ?? '');
    stdin.resume();
  });
}
