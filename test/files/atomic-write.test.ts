import { mkdir, mkdtemp, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { writeFileAtomic } from '../../src/files/atomic-write.js';

let folder: string;

beforeEach(async () => {
  folder = await mkdtemp(join(tmpdir(), 'gatehouse-atomic-'));
});

afterEach(async () => {
  await rm(folder, { recursive: true, force: true });
});

describe('writeFileAtomic', () => {
  it('writes a file only its owner may read, creating its folder', async () => {
    const file = join(folder, 'a', 'b', 'secret.json');
    await expect(writeFileAtomic(file, 'one')).resolves.toBe(true);
    expect(await readFile(file, 'utf8')).toBe('one');
    expect((await stat(file)).mode & 0o777).toBe(0o600);
    expect((await stat(join(folder, 'a'))).mode & 0o777).toBe(0o700);
  });

  it('replaces a file by rename: a new inode, and no temporary file left behind', async () => {
    const file = join(folder, 'users.yaml');
    await writeFile(file, 'old contents');
    const before = await stat(file);
    await writeFileAtomic(file, 'new');
    const after = await stat(file);
    expect(after.ino).not.toBe(before.ino);
    expect(await readFile(file, 'utf8')).toBe('new');
    expect(await readdir(folder)).toEqual(['users.yaml']);
  });

  it('never replaces a file when exclusive, and says so', async () => {
    const file = join(folder, 'keys.json');
    await expect(writeFileAtomic(file, 'first', { exclusive: true })).resolves.toBe(true);
    await expect(writeFileAtomic(file, 'second', { exclusive: true })).resolves.toBe(false);
    expect(await readFile(file, 'utf8')).toBe('first');
    expect(await readdir(folder)).toEqual(['keys.json']);
  });

  it('removes its temporary file when the rename fails', async () => {
    const target = join(folder, 'taken');
    await mkdir(target);
    await expect(writeFileAtomic(target, 'contents')).rejects.toMatchObject({ code: expect.stringMatching(/^E/) });
    expect(await readdir(folder)).toEqual(['taken']);
  });
});
