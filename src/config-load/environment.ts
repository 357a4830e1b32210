// The environment checks: what the config asks of the file system, looked at
// before anything is written or opened. The users file must exist, be
// readable and parse (with `usersIn: store` it only seeds a new store and may
// be missing; one that exists must still parse); the keys file must be readable, or its folder must
// exist and be writable so that the first start can create it; with Redis,
// the journal's folder must be writable or creatable. Read-only:
// nothing here creates, writes or locks a file.
import { accessSync, constants, readFileSync, statSync, type Stats } from 'node:fs';
import { dirname } from 'node:path';
import { privateKeyIn, readPemFile, readTlsMaterial, TlsMaterialError } from '../files/tls-material.js';
import { parseUsersFile, UsersFileError } from '../users/users-file.js';
import type { ConfiguredFiles } from './load.js';

export interface EnvironmentCheckOptions {
  /**
   * Files the embedded default names for a first start on a fresh checkout:
   * its users file may be missing (nobody can log in, which the gateway logs)
   * and its keys folder (`data/`) may still have to be created. Files an
   * operator configured must be where the config says.
   */
  embeddedDefault: { usersFile: boolean; keysFile: boolean };
  /** How a field is named in a problem: its path, and the variable it came from. */
  label(path: string): string;
}

/** Every problem found, each starting with its field's path; empty when all is well. */
export function checkEnvironment(files: ConfiguredFiles, options: EnvironmentCheckOptions): string[] {
  const problems: string[] = [];
  if (files.usersFile !== undefined) {
    const field = options.label(files.usersFileField ?? 'identity.usersFile');
    const mayBeMissing = options.embeddedDefault.usersFile || files.usersFileSeedsStore === true;
    problems.push(...usersFileProblems(files.usersFile, mayBeMissing).map((p) => `${field}: ${p}`));
  }
  if (files.keysFile !== undefined) {
    const field = options.label('tokens.keysFile');
    problems.push(...keysFileProblems(files.keysFile, options.embeddedDefault.keysFile).map((p) => `${field}: ${p}`));
  }
  if (files.privateKeyFile !== undefined) {
    problems.push(...privateKeyProblems(files.privateKeyFile).map((p) => `${options.label('identity.privateKeyFile')}: ${p}`));
  }
  for (const { field, path } of files.providerKeyFiles ?? []) problems.push(...privateKeyProblems(path).map((p) => `${field}: ${p}`));
  if (files.tls?.certFile !== undefined && files.tls.keyFile !== undefined) {
    problems.push(...tlsProblems({ certFile: files.tls.certFile, keyFile: files.tls.keyFile, caFile: files.tls.caFile }, options.label));
  }
  if (files.journalDir !== undefined) {
    problems.push(...journalDirProblems(files.journalDir).map((p) => `requests.journalDir: ${p}`));
  }
  return problems;
}

/**
 * The journal keeps accepted requests while the store is down: a folder that
 * cannot be made or written would lose them then, long after the start. It
 * must be a writable directory, or be creatable in the nearest one that exists.
 */
function journalDirProblems(dir: string): string[] {
  let folder = dir;
  let stats = statOrCode(folder);
  while (isMissing(stats) && dirname(folder) !== folder) {
    folder = dirname(folder);
    stats = statOrCode(folder);
  }
  if (typeof stats === 'string') return [`cannot look into directory ${folder} (${stats})`];
  if (!stats.isDirectory()) return [`${folder} is not a directory, so ${dir} cannot be a journal directory`];
  if (accessCode(folder, constants.W_OK | constants.X_OK) !== undefined) {
    return [`directory ${folder} is not writable (accepted requests are journalled in ${dir} while the store is down)`];
  }
  return [];
}

/** The public listener's pair (and client CAs), judged by the code that serves them: missing, unreadable or mismatched is refused before anything binds. */
function tlsProblems(files: { certFile: string; keyFile: string; caFile?: string | undefined }, label: (path: string) => string): string[] {
  const fields = { certFile: 'server.tls.certFile', keyFile: 'server.tls.keyFile', caFile: 'server.tls.clientCertificates.caFile' };
  try {
    readTlsMaterial(files);
    return [];
  } catch (error) {
    if (!(error instanceof TlsMaterialError)) throw error;
    return [`${label(fields[error.file])}: ${error.message}`];
  }
}

/** The client's key for private_key_jwt: a readable PKCS#8 PEM private key (never quoted back: it is a secret). */
function privateKeyProblems(file: string): string[] {
  let pem: Buffer;
  try {
    pem = readPemFile(file, 'keyFile');
  } catch (error) {
    if (!(error instanceof TlsMaterialError)) throw error;
    return [error.message];
  }
  // Stricter than a TLS key: jose signs the assertions with a PKCS#8 key only.
  const notPkcs8 = `${file} is not a PKCS#8 PEM private key (-----BEGIN PRIVATE KEY-----)`;
  if (!pem.includes('-----BEGIN PRIVATE KEY-----')) return [notPkcs8];
  try {
    privateKeyIn(pem, file);
  } catch {
    return [notPkcs8];
  }
  return [];
}

function usersFileProblems(file: string, mayBeMissing: boolean): string[] {
  const stats = statOrCode(file);
  if (isMissing(stats)) return mayBeMissing ? [] : [`no such file ${file} (gatehouse users add creates it)`];
  if (typeof stats === 'string') return [`cannot read ${file} (${stats})`];
  if (!stats.isFile()) return [`${file} is not a file`];
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (error) {
    return [`cannot read ${file} (${(error as NodeJS.ErrnoException).code ?? 'error'})`];
  }
  try {
    parseUsersFile(text, file);
  } catch (error) {
    if (!(error instanceof UsersFileError)) throw error;
    // Its problems name fields of the users file, never a hash.
    return error.problems.map((problem) => `${file}: ${problem}`);
  }
  return [];
}

function keysFileProblems(file: string, mayCreateFolder: boolean): string[] {
  const stats = statOrCode(file);
  if (typeof stats !== 'string') {
    if (!stats.isFile()) return [`${file} is not a file`];
    const code = accessCode(file, constants.R_OK);
    return code === undefined ? [] : [`cannot read ${file} (${code})`];
  }
  if (!isMissing(stats)) return [`cannot read ${file} (${stats})`];
  // The first start creates the file: its folder must take a new file.
  let folder = dirname(file);
  let folderStats = statOrCode(folder);
  if (isMissing(folderStats)) {
    if (!mayCreateFolder) return [`directory ${folder} does not exist`];
    // `data/` of the embedded default is created on first start, in the nearest folder that exists.
    while (isMissing(folderStats) && dirname(folder) !== folder) {
      folder = dirname(folder);
      folderStats = statOrCode(folder);
    }
  }
  if (typeof folderStats === 'string') return [`cannot look into directory ${folder} (${folderStats})`];
  if (!folderStats.isDirectory()) return [`${folder} is not a directory`];
  if (accessCode(folder, constants.W_OK | constants.X_OK) !== undefined) {
    return [`directory ${folder} is not writable (the key set is created there on first start)`];
  }
  return [];
}

/** ENOTDIR: some folder on the way is a file, so there is no such path either. */
function isMissing(stats: Stats | string): boolean {
  return stats === 'ENOENT' || stats === 'ENOTDIR';
}

/** The file's stats, or the error code that kept them from us. */
function statOrCode(path: string): Stats | string {
  try {
    return statSync(path);
  } catch (error) {
    return (error as NodeJS.ErrnoException).code ?? 'error';
  }
}

function accessCode(path: string, mode: number): string | undefined {
  try {
    accessSync(path, mode);
    return undefined;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code ?? 'error';
  }
}
