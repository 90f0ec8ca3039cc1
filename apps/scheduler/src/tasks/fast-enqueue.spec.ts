import { ManualClock } from '@baton/time';
import { SchedulerConfig } from '../config';
import { BackendGate } from '../health';
import { QueueLanes } from '../queue';
import { RunnerService } from '../runner';
import { newTask } from '../task-store/testing/new-task';
import { FAST_ENQUEUE_WAIT_MS, FastEnqueue } from './fast-enqueue';

/**
 * How long a create waits for its fast path into the queue, with a ManualClock: a queue that does
 * not answer (a silent partition not yet found by the readiness check) is not waited out.
 */
describe('FastEnqueue', () => {
  const config = { dispatcher: { intervalMs: 200 } } as SchedulerConfig;

  const setUp = (enqueue: () => Promise<void>, down = false) => {
    const clock = new ManualClock();
    const calls = { enqueue: 0, nudge: 0 };
    const lanes = {
      enqueue: () => {
        calls.enqueue++;
        return enqueue();
      },
    } as unknown as QueueLanes;
    const runner = { nudge: () => void calls.nudge++ } as unknown as RunnerService;
    const gate = { isDown: () => down } as unknown as BackendGate;
    return { clock, calls, fast: new FastEnqueue(lanes, runner, clock, config, gate) };
  };

  /** Whether `p` has settled once the microtasks and I/O ready now have run. */
  const settled = async (clock: ManualClock, p: Promise<void>): Promise<boolean> => {
    let done = false;
    void p.then(() => (done = true));
    await clock.settle();
    return done;
  };

  it('answers after FAST_ENQUEUE_WAIT_MS when the queue does not answer, not before', async () => {
    let answer: () => void = () => undefined;
    const { clock, calls, fast } = setUp(() => new Promise<void>((r) => (answer = r)));
    const create = fast.enqueue([newTask({ dueAt: clock.now() })]);
    await clock.advance(FAST_ENQUEUE_WAIT_MS - 1);
    expect(await settled(clock, create)).toBe(false);
    await clock.advance(1);
    expect(await settled(clock, create)).toBe(true);
    expect(calls.nudge).toBe(0);
    // The enqueue that answers later still wakes the runner.
    answer();
    await clock.settle();
    expect(calls.nudge).toBe(1);
  });

  it('answers at once when the queue does, and wakes the runner', async () => {
    const { clock, calls, fast } = setUp(() => Promise.resolve());
    const create = fast.enqueue([newTask({ dueAt: clock.now() })]);
    expect(await settled(clock, create)).toBe(true);
    expect(calls).toEqual({ enqueue: 1, nudge: 1 });
    expect(clock.pending()).toBe(0);
  });

  it('answers at once when the enqueue fails (the Dispatcher finds the task)', async () => {
    const { clock, calls, fast } = setUp(() => Promise.reject(new Error('queue gone')));
    const create = fast.enqueue([newTask({ dueAt: clock.now() })]);
    expect(await settled(clock, create)).toBe(true);
    expect(calls).toEqual({ enqueue: 1, nudge: 0 });
  });

  it('does not call a queue found down, nor enqueue a task that is not due', async () => {
    const down = setUp(() => Promise.resolve(), true);
    await down.fast.enqueue([newTask({ dueAt: down.clock.now() })]);
    expect(down.calls.enqueue).toBe(0);
    const later = setUp(() => Promise.resolve());
    await later.fast.enqueue([newTask({ dueAt: later.clock.now() + 60_000 })]);
    expect(later.calls.enqueue).toBe(0);
  });
});
