import { Inject, Injectable, OnModuleDestroy } from '@nestjs/common';
import { IntervalHistogram, monitorEventLoopDelay } from 'node:perf_hooks';
import { Clock, Timer } from './clock';
import { SCHEDULER_CONFIG, SchedulerConfig } from '../config';

/** How often the event loop's delay is read (and its histogram started afresh). */
const SAMPLE_MS = 500;

/**
 * How loaded this process is: the API requests it is answering now, and how late its event loop
 * runs (the mean delay over the last half second). Past either limit it is overloaded: the API
 * answers new requests 503 at once with `Retry-After` (instead of letting them queue until the
 * client times out), and the runner claims no new work until it catches up.
 */
@Injectable()
export class Overload implements OnModuleDestroy {
  private requests = 0;
  private lag = 0;
  private last: number;
  private lastLate = 0;
  private readonly histogram: IntervalHistogram;
  private readonly timer: Timer;

  constructor(
    @Inject(SCHEDULER_CONFIG) private readonly config: SchedulerConfig,
    private readonly clock: Clock,
  ) {
    this.last = clock.monotonic();
    this.histogram = monitorEventLoopDelay({ resolution: 20 });
    this.histogram.enable();
    this.timer = clock.setInterval(() => {
      // The histogram holds the delays seen since the last read (nanoseconds). A late loop is
      // remembered for a little while (halved every sample), so a burst is not let in at once.
      // The ticks' own lateness counts too (the histogram's mean is diluted by the many short
      // delays between blocks), when two ticks in a row were late: one late tick is a stall (a
      // start-up, a long collection), late ticks in a row are a loop that cannot keep up.
      const now = this.clock.monotonic();
      const late = Math.max(0, now - this.last - SAMPLE_MS);
      this.last = now;
      const sustained = Math.min(late, this.lastLate);
      this.lastLate = late;
      const mean = this.histogram.count > 0 ? this.histogram.mean / 1e6 : 0;
      this.lag = Math.max(mean, sustained, this.lag / 2);
      this.histogram.reset();
    }, SAMPLE_MS);
    this.timer.unref();
  }

  /**
   * The process listens now: what its start-up cost the event loop (loading code, building
   * modules, a busy machine's stalls meanwhile) is not load, and must not refuse its first requests.
   */
  started(): void {
    this.lag = 0;
    this.lastLate = 0;
    this.last = this.clock.monotonic();
    this.histogram.reset();
  }

  onModuleDestroy(): void {
    this.clock.clearInterval(this.timer);
    this.histogram.disable();
  }

  /** Mean event-loop delay over the last sample, in ms. */
  get lagMs(): number {
    return this.lag;
  }

  /** The event loop runs later than `BATON_OVERLOAD_LAG_MS`: take no new work. */
  get lagging(): boolean {
    return this.lag > this.config.api.overloadLagMs;
  }

  get inFlight(): number {
    return this.requests;
  }

  /**
   * Admits an API request, or says why not. An admitted request must call the returned `done`
   * once its answer is sent (or its connection closed).
   */
  admit(): { done: () => void } | { refused: string } {
    if (this.requests >= this.config.api.maxInFlight)
      return {
        refused: `${this.requests} requests in progress (limit ${this.config.api.maxInFlight})`,
      };
    if (this.lagging)
      return {
        refused: `event loop ${Math.round(this.lag)} ms behind (limit ${this.config.api.overloadLagMs} ms)`,
      };
    this.requests++;
    let open = true;
    return {
      done: () => {
        if (open) this.requests--;
        open = false;
      },
    };
  }
}
