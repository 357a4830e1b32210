// A digest of a file's bytes: instances compare what they hold without
// showing it (peers see the users file's digest, never its content).
import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';

/** SHA-256 of the file, base64url; undefined when it cannot be read. */
export async function fileDigest(file: string): Promise<string | undefined> {
  try {
    return createHash('sha256')
      .update(await readFile(file))
      .digest('base64url');
  } catch {
    return undefined;
  }
}
