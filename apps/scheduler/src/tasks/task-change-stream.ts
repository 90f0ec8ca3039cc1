import { Inject, Injectable, Logger, OnModuleDestroy } from '@nestjs/common';
import { ContractErrorCode, ContractException } from '@baton/task-contract';
import { Clock, Timer } from '../common';
import { SCHEDULER_CONFIG, SchedulerConfig } from '../config';
import { TailedTaskEvent, TaskEventTail } from '../task-store';

/** What one watcher wants; `tenant` is always set for a key of one tenant (TenantFields). */
export interface TaskChangeFilter {
  tenant?: string;
  taskTypes?: ReadonlySet<string>;
  taskIds?: ReadonlySet<string>;
  controlTaskId?: string;
}

/** A connected watcher: the stream writes to it, and ends it on shutdown. */
export interface TaskChangeWatcher {
  readonly filter: TaskChangeFilter;
  /** Events it wants (maybe none), and the highest event id read so far (where to resume from). */
  send(events: readonly TailedTaskEvent[], mark: number): void;
  /** The watcher missed more than can be replayed: it should read its views again. */
  reset(mark: number): void;
  end(): void;
}

/** Events (and marks) read for a watcher while its replay is being gathered. */
type Held = [readonly TailedTaskEvent[], number][];

/** Events read from the log at once; a full read is followed by another straight away. */
const BATCH = 1000;
/** Most events replayed to a watcher that comes back with Last-Event-ID. */
const REPLAY = 1000;
/** How long an id skipped by the log is looked for again (its transaction may still commit). */
const GAP_MS = 10_000;
/** Most skipped ids remembered; past it the watchers' fallback polling covers what is missed. */
const MAX_GAPS = 10_000;

export function matches(f: TaskChangeFilter, e: TailedTaskEvent): boolean {
  if (f.tenant !== undefined && e.tenant !== f.tenant) return false;
  if (f.taskTypes && !f.taskTypes.has(e.taskType)) return false;
  if (f.taskIds && !f.taskIds.has(e.taskId)) return false;
  if (f.controlTaskId !== undefined && e.controlTaskId !== f.controlTaskId) return false;
  return true;
}

/**
 * Task status changes for live views (the console's lists, a task's page, a topology run), read
 * from the lifecycle log and fanned out to every watcher of this instance: one read of the log
 * per interval however many watch, none when nobody does. Changes made through any instance are
 * seen, since all write the same log. Delivery is at least once and in log order per task, except
 * that an event whose transaction committed after later ones arrives late (the ids it skipped are
 * looked for again for GAP_MS); a view stays right by reading again what an event names.
 */
@Injectable()
export class TaskChangeStream implements OnModuleDestroy {
  private readonly logger = new Logger('TaskChangeStream');
  /** Each watcher, with what was read for it while its replay was being gathered (null after). */
  private readonly watchers = new Map<TaskChangeWatcher, Held | null>();
  private reading = false;
  /** The highest id read; undefined while nobody watches. */
  private cursor: number | undefined;
  /** Ids below the cursor not seen yet, with when they were first missed. */
  private readonly gaps = new Map<number, number>();
  private timer: Timer | undefined;
  private closed = false;

  constructor(
    private readonly tail: TaskEventTail,
    @Inject(SCHEDULER_CONFIG) private readonly config: SchedulerConfig,
    private readonly clock: Clock,
  ) {}

  /** The longest a connection is kept. */
  get maxSeconds(): number {
    return this.config.api.streamMaxSeconds;
  }

  get size(): number {
    return this.watchers.size;
  }

  /**
   * Adds a watcher; with `lastEventId` (where its previous connection stopped) the events since
   * are replayed first, or it is told to reset when there are more than REPLAY of them.
   * Returns the function that removes it.
   */
  async join(watcher: TaskChangeWatcher, lastEventId?: number): Promise<() => void> {
    this.refuseWhenClosed();
    if (this.watchers.size >= this.config.api.streamMaxWatchers)
      throw new ContractException(
        ContractErrorCode.OVERLOADED,
        `this scheduler already streams to ${this.watchers.size} watchers (BATON_STREAM_MAX_WATCHERS); poll instead`,
      );
    // In from now on: what is read while its replay is gathered waits for it, not past it.
    const held: Held = [];
    this.watchers.set(watcher, held);
    const leave = (): void => this.leave(watcher);
    try {
      await this.start();
      this.refuseWhenClosed();
      const mark = this.cursor as number;
      if (lastEventId !== undefined && lastEventId < mark) {
        const missed = (await this.tail.after(lastEventId, REPLAY + 1)).filter((e) => e.id <= mark);
        this.refuseWhenClosed();
        if (missed.length > REPLAY) watcher.reset(mark);
        else {
          this.lookAgainFor(lastEventId, mark, missed);
          watcher.send(
            missed.filter((e) => matches(watcher.filter, e)),
            this.resumeMark(),
          );
        }
      } else watcher.send([], this.resumeMark());
    } catch (err) {
      leave();
      throw err;
    }
    for (const [events, mark] of held) watcher.send(events, mark);
    this.watchers.set(watcher, null);
    this.schedule();
    return leave;
  }

  private refuseWhenClosed(): void {
    if (this.closed)
      throw new ContractException(
        ContractErrorCode.NOT_READY,
        'this scheduler is shutting down; connect again (another instance will answer)',
      );
  }

  /** Reading starts at the end of the log when the first watcher comes. */
  private async start(): Promise<void> {
    if (this.cursor !== undefined) return;
    const latest = await this.tail.latestId();
    this.cursor ??= latest; // another watcher may have started the reading meanwhile
  }

  /**
   * Ids up to `upTo` a replay from `after` did not find may belong to transactions still open (or
   * rolled back): they are looked for again like the ids a read skipped.
   */
  private lookAgainFor(after: number, upTo: number, found: readonly TailedTaskEvent[]): void {
    const now = this.clock.now();
    const seen = new Set(found.map((e) => e.id));
    for (let id = after + 1; id <= upTo && this.gaps.size < MAX_GAPS; id++)
      if (!seen.has(id) && !this.gaps.has(id)) this.gaps.set(id, now);
  }

  /**
   * Where a watcher resumes from: below the lowest id still looked for (a transaction that took
   * it may commit yet), else the highest id read. Resuming there may repeat events, never skip one.
   */
  private resumeMark(): number {
    let mark = this.cursor ?? 0;
    for (const id of this.gaps.keys()) mark = Math.min(mark, id - 1);
    return mark;
  }

  private leave(watcher: TaskChangeWatcher): void {
    this.watchers.delete(watcher);
    if (this.watchers.size > 0) return;
    // Nobody watches: stop reading, and start from the end again when someone comes.
    this.clock.clearTimeout(this.timer);
    this.timer = undefined;
    this.cursor = undefined;
    this.gaps.clear();
  }

  private schedule(delayMs = this.config.api.streamPollMs): void {
    if (this.timer || this.reading || this.closed || this.watchers.size === 0) return;
    this.timer = this.clock.setTimeout(() => {
      this.timer = undefined;
      this.reading = true;
      this.read()
        .then(
          (full) => full,
          (err: unknown) => {
            this.logger.warn(`reading the lifecycle log for live views failed: ${String(err)}`);
            return false;
          },
        )
        .then((full) => {
          this.reading = false;
          this.schedule(full ? 0 : undefined);
        });
    }, delayMs);
    this.timer.unref();
  }

  /** One read of the log; true when it was full (more is waiting). */
  private async read(): Promise<boolean> {
    await this.start();
    const from = this.cursor as number;
    const now = this.clock.now();
    const events = await this.tail.after(from, BATCH);
    const late = await this.tail.withIds([...this.gaps.keys()].slice(0, BATCH));
    if (this.cursor !== from) return false; // everybody left (and maybe came back) meanwhile
    for (const e of late) this.gaps.delete(e.id);
    for (const [id, since] of this.gaps) if (now - since > GAP_MS) this.gaps.delete(id);
    let expected = from + 1;
    for (const e of events) {
      for (; expected < e.id && this.gaps.size < MAX_GAPS; expected++) this.gaps.set(expected, now);
      expected = e.id + 1;
    }
    if (events.length > 0) this.cursor = events[events.length - 1].id;
    if (late.length > 0 || events.length > 0) this.deliver([...late, ...events], this.resumeMark());
    return events.length === BATCH;
  }

  private deliver(events: readonly TailedTaskEvent[], mark: number): void {
    // A fleet-wide watcher hears of the new mark also when it wants none of the events: a quiet
    // filter then resumes from near the end, not from before all it did not want. A watcher of
    // one tenant hears only of its own events: bare marks at the fleet's pace would tell it how
    // busy the other tenants are (it resumes from its last event, or is told to reset).
    for (const [w, held] of this.watchers) {
      const wanted = events.filter((e) => matches(w.filter, e));
      if (wanted.length === 0 && w.filter.tenant !== undefined) continue;
      if (held) held.push([wanted, mark]);
      else w.send(wanted, mark);
    }
  }

  /** Shutting down: every watcher is ended (its client connects again, to another instance). */
  onModuleDestroy(): void {
    this.closed = true;
    this.clock.clearTimeout(this.timer);
    for (const w of [...this.watchers.keys()]) w.end();
    this.watchers.clear();
  }
}
