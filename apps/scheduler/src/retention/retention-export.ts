import { appendFile, mkdir, open } from 'node:fs/promises';
import { join } from 'node:path';
import { PurgedTask } from '../task-store';

/**
 * Appends what is about to be purged to `<dir>/baton-purged-<YYYY-MM-DD>.jsonl`, one task per
 * line, and flushes it to disk before the purge deletes anything. A crash between the two writes
 * the tasks again on the next pass: a reader should take the last line of a task id.
 */
export class RetentionExport {
  constructor(private readonly dir: string) {}

  async write(tasks: readonly PurgedTask[], now: number): Promise<string> {
    await mkdir(this.dir, { recursive: true });
    const file = join(this.dir, `baton-purged-${new Date(now).toISOString().slice(0, 10)}.jsonl`);
    const body = tasks.map((t) => JSON.stringify(t, bigintSafe)).join('\n');
    if (body.length > 0) await appendFile(file, `${body}\n`);
    const handle = await open(file, 'a');
    try {
      await handle.sync();
    } finally {
      await handle.close();
    }
    return file;
  }
}

/** Rows may carry BIGINTs as bigint (drivers differ): written as numbers. */
function bigintSafe(_key: string, value: unknown): unknown {
  return typeof value === 'bigint' ? Number(value) : value;
}
