import { Clock, DeadlineError, STALL_GRACE_MS, STALL_SLACK_MS } from './clock';
import { ManualClock } from './manual-clock';

describe('ManualClock', () => {
  it('fires timers in due order, ties in the order they were set, and moves time to each', async () => {
    const clock = new ManualClock(1_000);
    const seen: string[] = [];
    clock.setTimeout(() => seen.push(`b@${clock.now()}`), 20);
    clock.setTimeout(() => seen.push(`a@${clock.now()}`), 10);
    clock.setTimeout(() => seen.push(`c@${clock.now()}`), 20);
    await clock.advance(19);
    expect(seen).toEqual(['a@1010']);
    await clock.advance(1);
    expect(seen).toEqual(['a@1010', 'b@1020', 'c@1020']);
    expect(clock.now()).toBe(1_020);
    expect(clock.monotonic()).toBe(20);
  });

  it('fires a timer that a firing timer sets when it falls within the span', async () => {
    const clock = new ManualClock(0);
    const seen: number[] = [];
    clock.setTimeout(() => clock.setTimeout(() => seen.push(clock.now()), 5), 5);
    await clock.advance(9);
    expect(seen).toEqual([]);
    await clock.advance(1);
    expect(seen).toEqual([10]);
  });

  it('repeats an interval until cleared, and the clear may come from inside it', async () => {
    const clock = new ManualClock(0);
    const seen: number[] = [];
    const t = clock.setInterval(() => {
      seen.push(clock.now());
      if (seen.length === 3) clock.clearInterval(t);
    }, 100);
    await clock.advance(1_000);
    expect(seen).toEqual([100, 200, 300]);
    expect(clock.pending()).toBe(0);
  });

  it('clears only its own timers, whatever their ids', async () => {
    const a = new ManualClock(0);
    const b = new ManualClock(0);
    const fired: string[] = [];
    const fromA = a.setTimeout(() => fired.push('a'), 10);
    b.setTimeout(() => fired.push('b'), 10);
    b.clearTimeout(fromA);
    await b.advance(10);
    await a.advance(10);
    expect(fired).toEqual(['b', 'a']);
  });

  it('never moves back when two advances overlap', async () => {
    const clock = new ManualClock(0);
    await Promise.all([clock.advance(100), clock.advance(10)]);
    expect(clock.now()).toBeGreaterThanOrEqual(100);
  });

  it('sleeps, is cut short by a signal, and runs deadlines on its own time', async () => {
    const clock = new ManualClock(0);
    let woke = false;
    const sleeping = clock.sleep(50).then(() => (woke = true));
    await clock.advance(49);
    expect(woke).toBe(false);
    await clock.advance(1);
    await sleeping;
    expect(woke).toBe(true);

    const stop = new AbortController();
    const cut = clock.sleep(1_000, stop.signal);
    stop.abort(new Error('stopped'));
    await expect(cut).rejects.toThrow('stopped');

    const deadline = clock.deadline(200);
    await clock.advance(199);
    expect(deadline.signal.aborted).toBe(false);
    await clock.advance(1);
    expect(deadline.signal.reason).toBeInstanceOf(DeadlineError);
    const cancelled = clock.deadline(10);
    cancelled.cancel();
    await clock.advance(100);
    expect(cancelled.signal.aborted).toBe(false);
    expect(clock.pending()).toBe(0);
  });

  it('until moves in steps until the check holds, and names what never came', async () => {
    const clock = new ManualClock(0);
    let done = false;
    clock.setTimeout(() => (done = true), 325);
    await clock.until(() => done, 'the flag', { stepMs: 100 });
    expect(clock.now()).toBe(400);
    await expect(clock.until(() => false, 'nothing', { stepMs: 100, maxMs: 300 })).rejects.toThrow(
      'nothing: not within 300 ms of clock time',
    );
  });
});

describe('Clock (the real one)', () => {
  it('a deadline whose parent has aborted is aborted with the parent’s reason', () => {
    const parent = new AbortController();
    parent.abort(new Error('stopping'));
    const d = new Clock().deadline(10_000, parent.signal);
    expect((d.signal.reason as Error).message).toBe('stopping');
    d.cancel();
  });

  it('gives a deadline whose timer fired late after a stall a grace of running time, not an abort', async () => {
    const clock = new ManualClock(0);
    const d = clock.deadline(10_000);
    await clock.advance(2_000);
    // The process stops for 15 s: its timer is 7 s overdue when it runs again.
    clock.stall(15_000);
    await clock.advance(0);
    expect(d.signal.aborted).toBe(false);
    // An answer read in the grace cancels it; unread, the deadline aborts once the grace is over.
    await clock.advance(STALL_GRACE_MS - 1);
    expect(d.signal.aborted).toBe(false);
    await clock.advance(1);
    expect(d.signal.reason).toBeInstanceOf(DeadlineError);

    // Without a stall, the deadline aborts on time; a timer late by less than the slack is no stall.
    const plain = clock.deadline(1_000);
    await clock.advance(1_000);
    expect(plain.signal.aborted).toBe(true);
    const busy = clock.deadline(1_000);
    clock.stall(1_000 + STALL_SLACK_MS);
    await clock.advance(0);
    expect(busy.signal.aborted).toBe(true);
    const cancelled = clock.deadline(1_000);
    clock.stall(5_000);
    cancelled.cancel();
    await clock.advance(5_000);
    expect([cancelled.signal.aborted, clock.pending()]).toEqual([false, 0]);
  });
});
