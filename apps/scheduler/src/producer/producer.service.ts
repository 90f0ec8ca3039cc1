import {
  Inject,
  Injectable,
  Logger,
  OnApplicationBootstrap,
  OnApplicationShutdown,
} from '@nestjs/common';
import {
  ContractErrorCode,
  ContractException,
  RepetitionKind,
  TaskStatus,
} from '@baton/task-contract';
import { Clock } from '../common/clock';
import { Metrics } from '../common/metrics';
import { SCHEDULER_CONFIG, SchedulerConfig } from '../config/scheduler.config';
import { TasksService } from '../tasks/tasks.service';
import { ProducerOwnership } from './ownership';
import { nextSlot, slotsBetween } from './schedule';
import { TimerModel } from './timer.model';
import { TimersRepository } from './timers.repository';

/** The idempotency key of one fire: the unique (tenant, key) index makes every slot fire once. */
export const fireKey = (timerId: string, slot: number): string => `timer:${timerId}:${slot}`;

/** The first slot at or after `from` that lies within the timer's start/end window, or null. */
export function firstSlotFrom(
  t: Pick<TimerModel, 'schedule' | 'startAt' | 'endAt'>,
  from: number,
): number | null {
  const start = Math.max(from, t.startAt ?? from);
  const slot = nextSlot(t.schedule, start - 1);
  return slot !== null && (t.endAt === null || slot <= t.endAt) ? slot : null;
}

/**
 * The Producer (ARCHITECTURE.md §6): turns timed definitions into tasks. It fires only the timers
 * this instance owns (ProducerOwnership), at their slot time, and creates each fire as a normal
 * task with `repetition=timed` under the idempotency key `timer:<id>:<slot>` — the task table's
 * unique index is what makes a slot fire once whatever happens to the owners. The task is written
 * first and the timer advanced after (compare-and-set on version): a crash in between leaves the
 * timer behind, and the next owner's attempt at the same slot finds the task already there.
 */
@Injectable()
export class ProducerService implements OnApplicationBootstrap, OnApplicationShutdown {
  private readonly logger = new Logger('Producer');
  private timers: TimerModel[] = [];
  private loadedAt = 0;
  private wake: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;
  private again = false;
  private stopped = true;

  constructor(
    private readonly repo: TimersRepository,
    private readonly ownership: ProducerOwnership,
    private readonly tasks: TasksService,
    private readonly metrics: Metrics,
    private readonly clock: Clock,
    @Inject(SCHEDULER_CONFIG) private readonly config: SchedulerConfig,
  ) {}

  onApplicationBootstrap(): void {
    this.stopped = false;
    this.ownership.onChange(() => this.poke(true));
    this.ownership.start();
    this.poke(true);
  }

  async onApplicationShutdown(): Promise<void> {
    this.stopped = true;
    if (this.wake) clearTimeout(this.wake);
    await this.running;
    await this.ownership.stop();
  }

  /** The timers (as last read) this instance fires now. */
  ownedTimers(): string[] {
    return this.timers.filter((t) => this.ownership.owns(t.timerId)).map((t) => t.timerId);
  }

  /** A timer created through this instance: known at once, without reading every timer again. */
  track(t: TimerModel): void {
    const i = this.timers.findIndex((x) => x.timerId === t.timerId);
    if (i >= 0) this.timers[i] = t;
    else this.timers.push(t);
    this.poke();
  }

  /** Look again now (a timer changed through this instance, or ownership moved). */
  poke(reload = false): void {
    if (reload) this.loadedAt = 0;
    if (this.stopped) return;
    if (this.running) {
      this.again = true;
      return;
    }
    if (this.wake) clearTimeout(this.wake);
    this.running = this.pass()
      .catch((err: unknown) =>
        this.logger.error(
          `producer pass failed: ${err instanceof Error ? err.message : String(err)}`,
        ),
      )
      .finally(() => {
        this.running = undefined;
        if (this.stopped) return;
        if (this.again) {
          this.again = false;
          this.poke();
        } else this.sleep();
      });
  }

  /** Sleeps until the next owned slot, or the next reload, whichever is first. */
  private sleep(): void {
    const now = this.clock.now();
    let until = this.loadedAt + this.config.producer.refreshMs;
    for (const t of this.timers) {
      if (t.nextFireAt !== null && t.nextFireAt < until && this.ownership.owns(t.timerId))
        until = t.nextFireAt;
    }
    this.wake = setTimeout(() => this.poke(), Math.max(0, until - now));
    this.wake.unref();
  }

  private async pass(): Promise<void> {
    if (this.clock.now() - this.loadedAt >= this.config.producer.refreshMs) {
      this.timers = await this.repo.active();
      this.loadedAt = this.clock.now();
    }
    const now = this.clock.now();
    const due = this.timers.filter(
      (t) =>
        t.enabled && t.nextFireAt !== null && t.nextFireAt <= now && this.ownership.owns(t.timerId),
    );
    for (const t of due) {
      if (this.stopped || !this.ownership.owns(t.timerId)) break;
      const next = await this.fireDue(t);
      const i = this.timers.indexOf(t);
      if (next && i >= 0) this.timers[i] = next;
      else if (i >= 0) this.loadedAt = 0; // changed elsewhere: read it again next pass
    }
    this.timers = this.timers.filter((t) => t.nextFireAt !== null && t.enabled);
  }

  /** Fires the due slots of one timer by its misfire and overlap policies, then advances it. */
  private async fireDue(t: TimerModel): Promise<TimerModel | undefined> {
    const now = this.clock.now();
    const slots = slotsBetween(
      t.schedule,
      t.nextFireAt as number,
      now,
      this.config.producer.maxCatchUp,
    ).filter((s) => t.endAt === null || s <= t.endAt);
    const late = slots.filter((s) => now - s > t.misfireGraceMs);
    const onTime = slots.filter((s) => now - s <= t.misfireGraceMs);
    let fire: number[] = [];
    let missed = 0;
    if (late.length > 0) {
      if (t.misfirePolicy === 'fire_all') fire = late;
      else if (t.misfirePolicy === 'fire_once') {
        fire = [late[late.length - 1]];
        missed = late.length - 1;
      } else missed = late.length;
      this.metrics.inc('baton_timer_misfires_total', { timer: t.timerId }, late.length);
      this.logger.warn(
        `timer ${t.timerId}: ${late.length} slot(s) missed (oldest ${new Date(late[0]).toISOString()}); ${t.misfirePolicy}`,
      );
    }
    fire = [...fire, ...onTime];

    let lastTaskId = t.lastTaskId;
    let lastFireAt = t.lastFireAt;
    let fired = 0;
    let skipped = 0;
    for (const slot of fire) {
      if (!this.ownership.owns(t.timerId)) return undefined;
      const outcome = await this.fireSlot(t, slot, lastTaskId);
      if (outcome === 'skipped') {
        skipped++;
        continue;
      }
      if (outcome === 'error') {
        skipped++;
        continue;
      }
      lastTaskId = outcome;
      lastFireAt = slot;
      fired++;
    }
    const last = slots.length > 0 ? slots[slots.length - 1] : (t.nextFireAt as number);
    const following = nextSlot(t.schedule, last);
    const next: TimerModel = {
      ...t,
      nextFireAt:
        following !== null && (t.endAt === null || following <= t.endAt) ? following : null,
      lastFireAt,
      lastTaskId,
      fireCount: t.fireCount + fired,
      misfireCount: t.misfireCount + missed,
      skipCount: t.skipCount + skipped,
      updatedAt: now,
    };
    return this.repo.replace(t, next);
  }

  /** Cancels the previous fire's task; while it is being driven (409) it is tried again, up to 10 s. */
  private async cancelPrevious(t: TimerModel, previous: string): Promise<void> {
    for (let tries = 0; ; tries++) {
      try {
        await this.tasks.cancel(previous);
        return;
      } catch (err) {
        const busy =
          err instanceof ContractException && err.code === ContractErrorCode.VERSION_CONFLICT;
        if (!busy || tries >= 200 || this.stopped) {
          this.logger.warn(`timer ${t.timerId}: cancelling ${previous}: ${String(err)}`);
          return;
        }
        await new Promise((r) => setTimeout(r, 50));
      }
    }
  }

  /** One slot: the overlap policy, then the task. Returns its task id, or why there is none. */
  private async fireSlot(
    t: TimerModel,
    slot: number,
    previous: string | null,
  ): Promise<string | 'skipped' | 'error'> {
    if (previous && t.overlapPolicy !== 'allow') {
      const prev = await this.tasks.get(previous).catch(() => undefined);
      if (prev && prev.status !== TaskStatus.FINISH) {
        if (t.overlapPolicy === 'skip') {
          this.metrics.inc('baton_timer_overlap_skips_total', { timer: t.timerId });
          return 'skipped';
        }
        // In the background: a task being driven answers 409 for a moment, and the fire must not wait.
        void this.cancelPrevious(t, previous);
        this.metrics.inc('baton_timer_overlap_cancels_total', { timer: t.timerId });
      }
    }
    const body = {
      ...t.template,
      tenant: t.tenant,
      idempotency_key: fireKey(t.timerId, slot),
      labels: {
        ...(t.template.labels ?? {}),
        timer_id: t.timerId,
        fire_time: new Date(slot).toISOString(),
      },
    };
    try {
      const { task, created } = await this.tasks.create(body, {
        repetition: RepetitionKind.TIMED,
        actor: `producer:${this.config.instanceId}`,
      });
      if (created) this.metrics.inc('baton_timer_fires_total', { timer: t.timerId });
      else this.metrics.inc('baton_timer_fire_duplicates_total', { timer: t.timerId });
      return task.taskId;
    } catch (err) {
      // The template no longer creates (type unregistered, ...): this slot is lost, loudly.
      this.metrics.inc('baton_timer_fire_errors_total', { timer: t.timerId });
      this.logger.error(
        `timer ${t.timerId} slot ${new Date(slot).toISOString()}: ${err instanceof ContractException ? err.message : String(err)}`,
      );
      return 'error';
    }
  }
}
