import { systemClock } from '@baton/time';
import { errorMessage } from '../../util/error-message';
import type { CheckResult, CheckVerdict } from '../conformance-kit';
import { NotApplicable } from '../expectations';
import { StandInScheduler } from './stand-in-scheduler';
import {
  ASKED_HEARTBEAT_MS,
  WorkerSideCheck,
  WorkerSideContext,
  WorkerSideOptions,
} from './worker-side-check';
import { WORKER_SIDE_CHECKS } from './worker-side-checks';
import { WorkerUnderTest } from './worker-under-test';

export type { WorkerSideOptions } from './worker-side-check';

/** Every worker-side check's name, in the order the kit runs them. */
export const WORKER_SIDE_CHECK_NAMES: readonly string[] = WORKER_SIDE_CHECKS.map((c) => c.name);

/**
 * The other side of the contract: what a worker sends. Starts a stand-in scheduler and the
 * worker (told the stand-in's URL), and checks its registration, that it follows the timing it
 * is given, the fence and attempt of its callbacks, its retries (5xx, a dropped connection) and
 * its drop of a report answered 409, its log batches, and what it does on SIGTERM. Language
 * neutral: the worker is any process that speaks the contract over HTTP.
 */
export class WorkerSideKit {
  private readonly checks: readonly WorkerSideCheck[];

  constructor(private readonly options: WorkerSideOptions) {
    this.checks = options.only ? select(options.only) : WORKER_SIDE_CHECKS;
  }

  async run(): Promise<CheckResult[]> {
    const clock = this.options.clock ?? systemClock;
    const standIn = new StandInScheduler(
      this.options.auth,
      { heartbeatIntervalMs: ASKED_HEARTBEAT_MS, typeHeartbeatIntervalMs: 1000 },
      clock,
    );
    await standIn.start();
    const worker = new WorkerUnderTest(this.options.command, {
      ...this.options.env,
      [this.options.urlEnv ?? 'BATON_SCHEDULER_URL']: standIn.url,
    });
    const context: WorkerSideContext = { options: this.options, standIn, worker, clock };
    const results: CheckResult[] = [];
    try {
      for (const check of this.checks) {
        const wasRunning = worker.running;
        try {
          const detail = await check.run(context);
          results.push({ name: check.name, section: check.section, verdict: 'pass', detail });
        } catch (err) {
          const verdict: CheckVerdict = err instanceof NotApplicable ? 'skip' : 'fail';
          // A worker that died (not of what the check did to it) says why in its output.
          const died =
            !wasRunning || worker.running
              ? ''
              : `; the worker exited: ${worker.output().slice(-600)}`;
          results.push({
            name: check.name,
            section: check.section,
            verdict,
            detail: `${errorMessage(err)}${verdict === 'fail' ? died : ''}`,
          });
        }
      }
    } finally {
      await worker.kill();
      await standIn.close();
    }
    return results;
  }
}

/** Registration (which every other check needs), then the checks whose name contains a text. */
function select(only: readonly string[]): WorkerSideCheck[] {
  if (only.length === 0) throw new Error('only names no check');
  const texts = only.map((t) => t.toLowerCase());
  const unmatched = texts.filter(
    (t) => !WORKER_SIDE_CHECKS.some((c) => c.name.toLowerCase().includes(t)),
  );
  if (unmatched.length > 0)
    throw new Error(
      `no worker-side check's name contains ${unmatched.map((t) => JSON.stringify(t)).join(', ')}`,
    );
  return WORKER_SIDE_CHECKS.filter(
    (c, i) => i === 0 || texts.some((t) => c.name.toLowerCase().includes(t)),
  );
}
