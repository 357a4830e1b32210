// The one shape of every `gatehouse` command: `--help` anywhere prints its
// usage on stdout (exit 0); a wrong command line is one line on stderr
// (exit 2); a bad config lists its problems, one line each (exit 78); any
// other failure is one line (exit 1). Never a stack trace, never the whole
// usage text on stderr. A name the config does not declare (a role, a scope)
// is exit 65, with the names it does declare.
import { ConfigError } from '../config-load/load.js';
import { UsersFileError } from '../users/users-file.js';

export const EXIT_OK = 0;
export const EXIT_FAILURE = 1;
export const EXIT_USAGE = 2;
/** sysexits.h EX_DATAERR: the input names something the config does not declare. */
export const EXIT_DATA = 65;
/** sysexits.h EX_CONFIG: what a service manager or CI job reads as "fix the configuration". */
export const EXIT_CONFIG = 78;

export interface OutputIo {
  stdout: NodeJS.WritableStream;
  stderr: NodeJS.WritableStream;
}

/** Wrong command line: one line on stderr and exit code 2. */
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

/** A role or scope the config does not declare (`authorization.roles`, `authorization.scopes`): exit code 65. */
export class UndeclaredNameError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'UndeclaredNameError';
  }
}

export interface Subcommand<Io> {
  /** What follows `gatehouse <group>`: `add NAME [--password-stdin]`. */
  synopsis: string;
  /** One line for the group's usage. */
  summary: string;
  /** More for the subcommand's own `--help`. */
  details?: string;
  run(args: string[], io: Io): Promise<number>;
}

export interface CommandGroup<Io> {
  name: string;
  subcommands: Record<string, Subcommand<Io>>;
  /** Said once, under the group's usage. */
  notes?: string;
}

export function writeLine(stream: NodeJS.WritableStream, text: string): void {
  stream.write(`${text}\n`);
}

/** `--help` or `-h` among the arguments, before any `--` (after it, words are positional). */
export function asksForHelp(args: readonly string[]): boolean {
  const end = args.indexOf('--');
  return (end === -1 ? args : args.slice(0, end)).some((arg) => arg === '--help' || arg === '-h');
}

/** The usage `--help` prints: the subcommand's when the arguments name one, else the group's. */
export function groupHelp<Io>(group: CommandGroup<Io>, args: readonly string[]): string {
  const named = args[0] !== undefined && Object.hasOwn(group.subcommands, args[0]) ? group.subcommands[args[0]] : undefined;
  if (named) {
    return [`usage: gatehouse ${group.name} ${named.synopsis}`, '', `  ${named.summary}`, ...(named.details ? ['', named.details] : [])].join('\n');
  }
  const entries = Object.values(group.subcommands);
  const synopses = entries.map((s, i) => `${i === 0 ? 'usage: ' : '       '}gatehouse ${group.name} ${s.synopsis}`);
  const summaries = formatTable(entries.map((s) => [`  ${s.synopsis.split(' ')[0]!}`, s.summary]));
  return [...synopses, '', summaries, ...(group.notes ? ['', group.notes] : [])].join('\n');
}

/** Runs `gatehouse <group> <subcommand> …`, or prints the usage asked for. */
export function runGroup<Io extends OutputIo>(group: CommandGroup<Io>, args: string[], io: Io): Promise<number> {
  const [name, ...rest] = args;
  const subcommand = name !== undefined && Object.hasOwn(group.subcommands, name) ? group.subcommands[name] : undefined;
  const command = subcommand ? `${group.name} ${name}` : group.name;
  return runCli(command, io, async () => {
    if (asksForHelp(args) || name === 'help') {
      writeLine(io.stdout, groupHelp(group, name === 'help' ? rest : args));
      return EXIT_OK;
    }
    return subcommandOf(group, args).run(rest, io);
  });
}

/** The subcommand `args` name; a UsageError when they name none. */
export function subcommandOf<Io>(group: CommandGroup<Io>, args: readonly string[]): Subcommand<Io> {
  const name = args[0];
  if (name === undefined) throw new UsageError(`missing command after 'gatehouse ${group.name}'`);
  if (!Object.hasOwn(group.subcommands, name)) throw new UsageError(`unknown command: ${group.name} ${name}`);
  return group.subcommands[name]!;
}

/** Runs a command and turns its outcome into an exit code and at most a few lines of stderr. */
export async function runCli(command: string, io: OutputIo, run: () => Promise<number>): Promise<number> {
  try {
    return await run();
  } catch (error) {
    const [code, lines] = describeFailure(error, command);
    for (const line of lines) writeLine(io.stderr, `gatehouse: ${line}`);
    return code;
  }
}

function describeFailure(error: unknown, command: string): [number, string[]] {
  if (error instanceof UsageError || isParseArgsError(error)) {
    const message = error instanceof UsageError ? error.message : firstSentence((error as Error).message);
    return [EXIT_USAGE, [`${oneLine(message)} (see gatehouse ${command ? `${command} ` : ''}--help)`]];
  }
  // One line per problem, each naming its file, as compilers do: greppable in a CI log.
  if (error instanceof ConfigError) return [EXIT_CONFIG, error.problems.map((p) => `${error.source}: ${oneLine(p)}`)];
  if (error instanceof UndeclaredNameError) return [EXIT_DATA, [oneLine(error.message)]];
  if (error instanceof UsersFileError) return [EXIT_FAILURE, error.problems.map((p) => `invalid users file ${error.file}: ${oneLine(p)}`)];
  return [EXIT_FAILURE, [oneLine(error instanceof Error ? error.message : String(error))]];
}

function isParseArgsError(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' && code.startsWith('ERR_PARSE_ARGS_');
}

/** node:util parseArgs explains at length how to pass a word starting with '-'; its first sentence is the point. */
function firstSentence(message: string): string {
  const end = message.indexOf('. ');
  const sentence = end === -1 ? message : message.slice(0, end);
  return sentence.charAt(0).toLowerCase() + sentence.slice(1);
}

function oneLine(text: string): string {
  return text.replace(/\s*\n\s*/g, ' ').trim();
}

/** Left-aligned columns separated by two spaces; the last column is not padded. */
export function formatTable(rows: readonly (readonly string[])[]): string {
  const widths: number[] = [];
  for (const row of rows) row.forEach((cell, i) => (widths[i] = Math.max(widths[i] ?? 0, cell.length)));
  return rows.map((row) => row.map((cell, i) => (i === row.length - 1 ? cell : cell.padEnd(widths[i]!))).join('  ')).join('\n');
}

/** The one positional argument a command takes (NAME, USER, KEYID). */
export function singlePositional(positionals: readonly string[], name: string): string {
  if (positionals.length === 0) throw new UsageError(`missing ${name}`);
  if (positionals.length > 1) throw new UsageError(`unexpected argument: ${positionals[1]}`);
  return positionals[0]!;
}
