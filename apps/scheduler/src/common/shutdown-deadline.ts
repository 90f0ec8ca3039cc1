import { Clock } from './clock';

/**
 * The bound on a shutdown: once started (SIGTERM), the process ends at `graceMs` whatever its
 * backends do. A shutdown waits on them (the drives' last writes, the hand-back of claims, the
 * timer ownership, closing pools); a database or a queue that stopped answering without closing
 * anything (a partition) would hold it for as long as the partition lasts, and Kubernetes would
 * end it with SIGKILL. What could not be handed back by then lapses by lease, as after a crash.
 */
export class ShutdownDeadline {
  private startedAt: number | undefined;

  constructor(
    readonly graceMs: number,
    private readonly clock: Clock,
    /** Ends the process; told how long the shutdown had gone on. */
    private readonly exit: (afterMs: number) => void,
  ) {}

  /**
   * Starts the bound (the first call only). The timer does not itself keep the process up: a
   * shutdown that ends on its own exits as before.
   */
  start(): void {
    if (this.startedAt !== undefined) return;
    this.startedAt = this.clock.now();
    this.clock
      .setTimeout(() => this.exit(this.clock.now() - (this.startedAt as number)), this.graceMs)
      .unref();
  }

  /** The part of the grace the drives under way may take: half, the rest for handing back. */
  static drivesShare(graceMs: number): number {
    return Math.floor(graceMs / 2);
  }
}
