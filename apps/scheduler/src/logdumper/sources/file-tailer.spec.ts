import { appendFileSync, mkdtempSync, rmSync, truncateSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Logger } from '@nestjs/common';
import { Lease, LockProvider } from '@baton/locks';
import {
  ClaimResult,
  FilePosition,
  LogOffsetsRepository,
  StoredClaim,
} from '../log-offsets.repository';
import { Incoming, LogProcessorService } from '../log-processor.service';
import { LogRecord } from '../log-record';
import { FileTailer } from './file-tailer';

/** The repository's rules, in memory: fenced claim (or a stale row), fenced save and touch. */
class MemoryOffsets {
  row: (FilePosition & StoredClaim) | null = null;

  get(): Promise<FilePosition | undefined> {
    return Promise.resolve(this.row ? { ...this.row } : undefined);
  }

  claim(
    _id: string,
    fence: number,
    owner: string,
    now: number,
    staleAfterMs: number,
  ): Promise<ClaimResult> {
    this.row ??= {
      fileId: null,
      generation: 0,
      offset: 0,
      headBytes: 0,
      headHash: null,
      fence: 0,
      owner: null,
      updatedAt: now,
    };
    const before = { fence: this.row.fence, owner: this.row.owner, updatedAt: this.row.updatedAt };
    if (this.row.fence > fence && this.row.updatedAt >= now - staleAfterMs)
      return Promise.resolve({ claimed: false, stored: before });
    Object.assign(this.row, { fence, owner, updatedAt: now });
    return Promise.resolve({
      claimed: true,
      takenOverFrom: before.fence > fence ? before : null,
    });
  }

  save(_id: string, pos: FilePosition, fence: number, now: number): Promise<boolean> {
    if (this.row?.fence !== fence) return Promise.resolve(false);
    Object.assign(this.row, pos, { updatedAt: now });
    return Promise.resolve(true);
  }

  touch(_id: string, fence: number, now: number): Promise<boolean> {
    if (this.row?.fence !== fence) return Promise.resolve(false);
    this.row.updatedAt = now;
    return Promise.resolve(true);
  }
}

/** A lock that is always free and hands out `nextFence`, counting up. */
function fakeLocks(): LockProvider & { nextFence: number } {
  const locks = {
    nextFence: 1,
    tryAcquire: () =>
      Promise.resolve({
        fence: locks.nextFence++,
        lost: false,
        release: () => Promise.resolve(),
      } as unknown as Lease),
  };
  return locks as unknown as LockProvider & { nextFence: number };
}

describe('FileTailer', () => {
  let dir: string;
  let path: string;
  let offsets: MemoryOffsets;
  let locks: LockProvider & { nextFence: number };
  let seen: LogRecord[];
  let now: number;
  let warnings: string[];

  const processor = {
    process: (_source: string, records: readonly Incoming[]) => {
      for (const r of records) if ('position' in r) seen.push(r);
      return Promise.resolve([]);
    },
  } as unknown as LogProcessorService;

  const tailer = () =>
    new FileTailer(
      { name: 'app', path, owner: 'me', batch: 3, leaseMs: 1000 },
      locks,
      offsets as unknown as LogOffsetsRepository,
      processor,
      () => now,
    );
  const lines = (from: number, to: number) =>
    Array.from({ length: to - from }, (_, i) => `t=${from + i} line ${from + i}\n`).join('');
  const texts = () => seen.map((r) => r.content.text);
  const expectNoKeyTwice = () =>
    expect(new Set(seen.map((r) => r.position)).size).toBe(seen.length);

  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'baton-tailer-'));
    path = join(dir, 'app.log');
    writeFileSync(path, '');
    offsets = new MemoryOffsets();
    locks = fakeLocks();
    seen = [];
    now = 1_000_000;
    warnings = [];
    jest.spyOn(Logger.prototype, 'warn').mockImplementation((m: unknown) => {
      warnings.push(String(m));
    });
    jest.spyOn(Logger.prototype, 'log').mockImplementation(() => undefined);
  });

  afterEach(() => {
    jest.restoreAllMocks();
    rmSync(dir, { recursive: true, force: true });
  });

  it('reads a file truncated and rewritten past the old offset between two passes, as a new generation', async () => {
    const t = tailer();
    appendFileSync(path, lines(0, 10));
    await t.pass();
    expect(seen).toHaveLength(10);
    truncateSync(path, 0);
    appendFileSync(path, lines(100, 130)); // more bytes than before: the size alone shows nothing
    await t.pass();
    expect(texts().slice(10)).toEqual(lines(100, 130).trimEnd().split('\n'));
    expectNoKeyTwice();
    // The line at byte 0 of each generation has its own key.
    expect(seen[0].position).not.toEqual(seen[10].position);
    expect(seen[0].position.endsWith(':0')).toBe(true);
    expect(offsets.row?.generation).toBe(2);
    await t.close();
  });

  it('reads a truncated file again when it got shorter, and a file under 1 KiB rewritten longer', async () => {
    const t = tailer();
    appendFileSync(path, lines(0, 3));
    await t.pass();
    truncateSync(path, 0);
    appendFileSync(path, lines(10, 11));
    await t.pass();
    truncateSync(path, 0);
    appendFileSync(path, lines(20, 30));
    await t.pass();
    expect(texts()).toEqual(
      [...lines(0, 3).split('\n'), ...lines(10, 11).split('\n'), ...lines(20, 30).split('\n')]
        .filter(Boolean)
        .map((l) => l),
    );
    expectNoKeyTwice();
    await t.close();
  });

  it('after a restart, notices that the stored file was rewritten (same inode) and reads it as a new generation', async () => {
    const first = tailer();
    appendFileSync(path, lines(0, 200)); // over 1 KiB: the stored head is 1 KiB
    for (let i = 0; i < 3; i++) await first.pass(); // a pass reads up to 50 batches of 3
    await first.close();
    expect(seen).toHaveLength(200);
    expect(offsets.row?.headBytes).toBe(1024);
    truncateSync(path, 0);
    appendFileSync(path, lines(1000, 1300));
    const second = tailer();
    for (let i = 0; i < 3; i++) await second.pass();
    expect(texts().slice(200)).toEqual(lines(1000, 1300).trimEnd().split('\n'));
    expectNoKeyTwice();
    expect(warnings.some((w) => w.includes('is no longer the file read before'))).toBe(true);
    await second.close();
  });

  it('resumes an unchanged file where it stopped after a restart', async () => {
    const first = tailer();
    appendFileSync(path, lines(0, 50));
    await first.pass();
    await first.close();
    appendFileSync(path, lines(50, 60));
    const second = tailer();
    await second.pass();
    expect(texts()).toEqual(lines(0, 60).trimEnd().split('\n'));
    expect(offsets.row?.generation).toBe(1);
    await second.close();
  });

  it('warns when the stored fence refuses its claim, and takes over once the row is 3 leases old', async () => {
    appendFileSync(path, lines(0, 5));
    const t = tailer();
    await offsets.claim('file:app', 500, 'gone', now, 3000);
    await t.pass();
    expect(seen).toHaveLength(0);
    expect(warnings.filter((w) => w.includes('the lock gave fence'))).toHaveLength(1);
    now += 1000;
    await t.pass(); // refused again, not logged again
    expect(warnings.filter((w) => w.includes('the lock gave fence'))).toHaveLength(1);
    now += 2001;
    await t.pass();
    expect(seen).toHaveLength(5);
    expect(warnings.some((w) => w.includes('over from fence 500 of gone'))).toBe(true);
    await t.close();
  });

  it('refreshes updated_at while idle, so a live reader is never taken for stale', async () => {
    appendFileSync(path, lines(0, 2));
    const t = tailer();
    await t.pass();
    const fence = offsets.row?.fence;
    for (let i = 0; i < 10; i++) {
      now += 400;
      await t.pass();
    }
    expect(offsets.row?.updatedAt).toBeGreaterThanOrEqual(now - 500);
    // A reader with a lower fence is refused: the row is fresh.
    const r = await offsets.claim('file:app', 0, 'other', now, 3000);
    expect(r.claimed).toBe(false);
    expect(offsets.row?.fence).toBe(fence);
    await t.close();
  });
});
