import { WorkerTimeoutError, WorkerUnavailableError } from '../errors/worker-call.errors';

/**
 * The scheduler instances a worker talks to, from `BATON_SCHEDULER_URL` (one URL, or several
 * separated by commas): calls go to the one that answered last, and one that cannot be reached
 * (refused, unreachable, 5xx, no answer in time) hands the call to the next at once. Every
 * instance serves every call, so the worker keeps registering, heartbeating and reporting while
 * one of them restarts.
 */
export class SchedulerUrls {
  readonly all: readonly string[];
  private current = 0;

  constructor(spec: string) {
    this.all = spec
      .split(',')
      .map((u) => u.trim().replace(/\/+$/, ''))
      .filter((u) => u.length > 0);
    if (this.all.length === 0) throw new Error('no scheduler URL given');
  }

  /** Runs `call` against the instances in turn, from the last good one, until one answers. */
  async call<T>(call: (url: string) => Promise<T>): Promise<T> {
    let last: unknown;
    for (let i = 0; i < this.all.length; i++) {
      const k = (this.current + i) % this.all.length;
      try {
        const answer = await call(this.all[k]);
        this.current = k;
        return answer;
      } catch (err) {
        if (!(err instanceof WorkerUnavailableError || err instanceof WorkerTimeoutError))
          throw err;
        last = err;
      }
    }
    // None answered: next time start from the one after.
    this.current = (this.current + 1) % this.all.length;
    throw last;
  }
}
