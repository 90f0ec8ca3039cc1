import { createHash } from 'node:crypto';
import { FileHandle, open, readdir, stat } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';

/** The identity of a file across renames: its inode number. */
export type FileId = string;

/**
 * How many of a file's first bytes identify its content. Log lines start with timestamps or
 * sequence numbers, so a truncated and rewritten file (or another file that got a freed inode)
 * almost never starts with the same 1 KiB; a file shorter than that is identified by what it has.
 */
export const HEAD_BYTES = 1024;

/** The fingerprint of a file's first bytes, as stored beside the offset. */
export function hashHead(head: Buffer): string {
  return createHash('sha256').update(head).digest('hex');
}

/** What is at a path right now, or null when nothing is. */
export async function identify(
  path: string,
): Promise<{ fileId: FileId; size: number; mtimeMs: number } | null> {
  try {
    const s = await stat(path, { bigint: true });
    return { fileId: s.ino.toString(), size: Number(s.size), mtimeMs: Number(s.mtimeMs) };
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw err;
  }
}

/**
 * Finds where a rotated file went: a sibling named after the original (`app.log.1`,
 * `app.log-20250101`, ...) with the same inode. Rotation by rename keeps the inode, so the rest of
 * a file the reader had not finished before a restart can still be read.
 */
export async function findRotated(path: string, fileId: FileId): Promise<string | null> {
  const dir = dirname(path);
  const base = basename(path);
  for (const name of await readdir(dir)) {
    if (name === base || !name.startsWith(base)) continue;
    const found = await identify(join(dir, name)).catch(() => null);
    if (found?.fileId === fileId) return join(dir, name);
  }
  return null;
}

/**
 * The file that followed `fileId` in the rotation chain of `path`: of the path and its rotated
 * siblings, the one last written soonest after the old file was (each file of a chain stops
 * being written when the next one starts). The current file at the path wins only when no
 * rotated sibling fits, so a reader that was down across several rotations reads them in order.
 */
export async function findSuccessor(
  path: string,
  fileId: FileId,
  oldMtimeMs: number,
): Promise<string> {
  const dir = dirname(path);
  const base = basename(path);
  let best: { path: string; mtimeMs: number } | null = null;
  for (const name of await readdir(dir)) {
    if (name === base || !name.startsWith(base)) continue;
    const found = await identify(join(dir, name)).catch(() => null);
    if (!found || found.fileId === fileId || found.mtimeMs < oldMtimeMs) continue;
    if (!best || found.mtimeMs < best.mtimeMs)
      best = { path: join(dir, name), mtimeMs: found.mtimeMs };
  }
  return best?.path ?? path;
}

/** An open log file, read by byte offset. Kept open so a renamed file can still be finished. */
export class LogFile {
  private constructor(
    private readonly handle: FileHandle,
    readonly fileId: FileId,
    readonly path: string,
  ) {}

  static async open(path: string): Promise<LogFile> {
    const handle = await open(path, 'r');
    try {
      const s = await handle.stat({ bigint: true });
      return new LogFile(handle, s.ino.toString(), path);
    } catch (err) {
      await handle.close();
      throw err;
    }
  }

  async size(): Promise<number> {
    return Number((await this.handle.stat({ bigint: true })).size);
  }

  async mtimeMs(): Promise<number> {
    return Number((await this.handle.stat({ bigint: true })).mtimeMs);
  }

  /** Up to `max` bytes from `offset` (fewer at the end of the file). */
  async read(offset: number, max: number): Promise<Buffer> {
    const buf = Buffer.alloc(max);
    const { bytesRead } = await this.handle.read(buf, 0, max, offset);
    return buf.subarray(0, bytesRead);
  }

  async close(): Promise<void> {
    await this.handle.close().catch(() => undefined);
  }
}
