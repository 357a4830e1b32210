// `gatehouse clients …`: makes what a `tokens.clients` entry needs, the
// secret a confidential client authenticates with and the scrypt hash the
// config keeps, so that no checkout or tsx is needed where the image runs.
// The config itself is the operator's (often a ConfigMap): nothing here reads
// or writes it. A secret is printed once and never stored or logged; one an
// operator brings is judged as configured secrets are (core/secret-strength.ts).
import { randomBytes } from 'node:crypto';
import { parseArgs } from 'node:util';
import { judgeSecret, SECRET_ADVICE } from '../core/secret-strength.js';
import { hashPassword } from '../users/passwords.js';
import { CliError, EXIT_OK, singlePositional, UsageError, writeLine, type CommandGroup, type OutputIo } from './command.js';
import { readAll, type CliIo } from './io.js';

export interface ClientsIo extends OutputIo {
  stdin: CliIo['stdin'];
}

/** Characters that need no encoding in HTTP Basic or a form body (RFC 3986 unreserved). */
const CLIENT_ID = /^[A-Za-z0-9._~-]{1,200}$/;
const SECRET_BYTES = 32;

export const CLIENTS_COMMANDS: CommandGroup<ClientsIo> = {
  name: 'clients',
  subcommands: {
    add: {
      synopsis: 'add ID',
      summary: 'make a client secret (printed once) and the tokens.clients entry that takes it',
      details: `  Prints one YAML document on stdout: the new secret (${SECRET_BYTES} random bytes,
  base64url), shown this once, and the tokens.clients entry with the secret's
  scrypt hash. Give the secret to the client; the config keeps only the hash. ID is
  letters, digits and . _ ~ - (at most 200). The config is not read or changed.`,
      run: add,
    },
    'hash-secret': {
      synopsis: 'hash-secret',
      summary: 'the secretHash of a client secret read from stdin',
      details: `  Reads a secret the client already has from stdin (one trailing newline is
  dropped) and prints its scrypt hash for tokens.clients[].secretHash. A
  placeholder, a repeated pattern or a guessable secret is refused (exit 1).`,
      run: hashSecret,
    },
  },
};

async function add(args: string[], io: ClientsIo): Promise<number> {
  const { positionals } = parseArgs({ args, options: {}, allowPositionals: true, strict: true });
  const id = singlePositional(positionals, 'ID');
  if (!CLIENT_ID.test(id)) throw new UsageError('a client ID is letters, digits and . _ ~ - (at most 200)');
  const secret = newSecret();
  const secretHash = await hashPassword(secret);
  // One YAML document, for a person and for a script alike: the secret, and the entry where the config takes it.
  // Quoted, so that no ID or secret reads as a number, a boolean or null.
  writeLine(io.stdout, `# The secret of client ${id}, shown this once: Gatehouse keeps only its hash.`);
  writeLine(io.stdout, `secret: ${JSON.stringify(secret)}`);
  writeLine(io.stdout, '# Add the entry to tokens.clients in the config:');
  writeLine(io.stdout, 'tokens:\n  clients:');
  writeLine(io.stdout, `    - id: ${JSON.stringify(id)}\n      secretHash: ${secretHash}`);
  return EXIT_OK;
}

async function hashSecret(args: string[], io: ClientsIo): Promise<number> {
  parseArgs({ args, options: {}, allowPositionals: false, strict: true });
  if (io.stdin.isTTY === true) throw new UsageError('hash-secret reads the secret from stdin: pipe it in');
  const secret = (await readAll(io.stdin)).replace(/\r?\n$/, '');
  if (secret === '') throw new CliError('no secret on stdin');
  const verdict = judgeSecret(secret);
  if (!verdict.strong) throw new CliError(`the client secret ${verdict.weakness}: ${SECRET_ADVICE}, or let \`gatehouse clients add\` make one`);
  writeLine(io.stdout, await hashPassword(secret));
  return EXIT_OK;
}

/** Random bytes, drawn again in the rare case they happen to read as a placeholder word. */
function newSecret(): string {
  for (;;) {
    const secret = randomBytes(SECRET_BYTES).toString('base64url');
    if (judgeSecret(secret).strong) return secret;
  }
}
