import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { RunInterval, findOverlaps, readRunLogs } from './run-log-analysis';

const run = (
  task: string,
  start: number,
  end: number | undefined,
  keys: string[] = [],
  attempt = 1,
): RunInterval => ({
  task_id: task,
  attempt,
  worker_id: 'w',
  lock_keys: keys,
  start,
  end,
});

describe('findOverlaps', () => {
  it('finds two runs of one task that overlapped', () => {
    const overlaps = findOverlaps([run('t1', 0, 10), run('t1', 5, 15, [], 2)]);
    expect(overlaps).toHaveLength(1);
    expect(overlaps[0].on).toBe('task:t1');
  });

  it('finds two tasks that held one lock key at once', () => {
    const overlaps = findOverlaps([run('a', 0, 10, ['db-1']), run('b', 9, 12, ['db-1'])]);
    expect(overlaps.map((o) => o.on)).toEqual(['lock:db-1']);
  });

  it('accepts runs that touch end to start, and runs on different tasks and keys', () => {
    expect(
      findOverlaps([
        run('t', 0, 10),
        run('t', 10, 20, [], 2),
        run('u', 5, 15, ['k']),
        run('v', 5, 15, ['j']),
      ]),
    ).toEqual([]);
  });

  it('finds an overlap hidden behind a long run', () => {
    // the second run ends early; the third overlaps only with the first
    expect(
      findOverlaps([run('t', 0, 100), run('t', 100, 100, [], 2), run('t', 50, 60, [], 3)]),
    ).toHaveLength(1);
  });

  it('treats a run without an end (its process was killed) as lasting until the cut-off', () => {
    const runs = [run('t', 0, undefined), run('t', 50, 60, [], 2)];
    expect(findOverlaps(runs, 40)).toEqual([]);
    expect(findOverlaps(runs, 55)).toHaveLength(1);
    expect(findOverlaps(runs)).toHaveLength(1);
  });
});

describe('readRunLogs', () => {
  it('pairs start and end lines across files and keeps unfinished runs', () => {
    const dir = mkdtempSync(join(tmpdir(), 'runlog-'));
    try {
      const line = (o: object) =>
        JSON.stringify({ task_type: 'x', fence: 1, lock_keys: [], worker_id: 'w', pid: 1, ...o });
      writeFileSync(
        join(dir, 'a.jsonl'),
        [
          line({ event: 'start', task_id: 't', attempt: 1, started_at: 1 }),
          line({
            event: 'end',
            task_id: 't',
            attempt: 1,
            started_at: 1,
            ended_at: 5,
            outcome: 'SUCCESS',
          }),
          '',
        ].join('\n'),
      );
      writeFileSync(
        join(dir, 'b.jsonl'),
        `${line({ event: 'start', task_id: 'u', attempt: 1, started_at: 3, worker_id: 'w2' })}\n`,
      );
      const runs = readRunLogs([join(dir, 'a.jsonl'), join(dir, 'b.jsonl')]);
      expect(runs).toEqual([
        {
          task_id: 't',
          attempt: 1,
          worker_id: 'w',
          lock_keys: [],
          start: 1,
          end: 5,
          outcome: 'SUCCESS',
        },
        { task_id: 'u', attempt: 1, worker_id: 'w2', lock_keys: [], start: 3, end: undefined },
      ]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
