import { Inject, Injectable, Logger } from '@nestjs/common';
import { ContractException, RepetitionKind, TaskStatus } from '@baton/task-contract';
import { Clock } from '../common';
import { Metrics } from '../metrics';
import { SCHEDULER_CONFIG, SchedulerConfig } from '../config';
import { CreateTaskDto, TaskActionsService, TasksService } from '../tasks';
import type { TaskModel } from '../task-store';
import { TopologyRunsService } from '../topologies';
import { TimerModel, TopologyTemplate, isTopologyTemplate } from './timer.model';

/** The idempotency key of one fire: the unique (tenant, key) index makes every slot fire once. */
export const fireKey = (timerId: string, slot: number): string => `timer:${timerId}:${slot}`;

/**
 * The idempotency key of a fire asked for by a person ("run now"), apart from the slots' keys: by
 * the request's own key, so a request sent again makes no second fire.
 */
export const manualFireKey = (timerId: string, requestKey: string): string =>
  `timer:${timerId}:now:${requestKey}`;

/** One fire: its instant, the idempotency key it is made with, and the person who asked for it. */
interface Fire {
  at: number;
  key: string;
  /** Set for a fire a person asked for (`api:key:...`); absent for a slot. */
  askedBy?: string;
}

/** What a fire made: the task (or the topology run), whether this fire created it, and when. */
export interface Fired {
  taskId: string;
  created: boolean;
  run: boolean;
  /** The fire's instant (its label fire_time). */
  at: number;
}

/**
 * What one fire of a timer does (docs/tasks.md, "Timers"): the overlap policy against the
 * previous fire's task, then the task (or the topology run) made under the fire's key. The
 * Producer fires the slots; the API fires one now when a person asks.
 */
@Injectable()
export class TimerFiring {
  private readonly logger = new Logger('Producer');

  constructor(
    private readonly tasks: TasksService,
    private readonly actions: TaskActionsService,
    private readonly topologies: TopologyRunsService,
    private readonly metrics: Metrics,
    private readonly clock: Clock,
    @Inject(SCHEDULER_CONFIG) private readonly config: SchedulerConfig,
  ) {}

  /**
   * One slot: the overlap policy, then the task. A template the API refuses now (4xx: type gone,
   * ...) skips the slot, loudly; anything else (the database, a 5xx) is thrown, so nothing is
   * advanced and the same slot is tried again.
   */
  async slot(t: TimerModel, slot: number, previous: string | null): Promise<Fired | 'skipped'> {
    if (await this.overlapSkips(t, previous, `producer:${this.config.instanceId}`))
      return 'skipped';
    try {
      return await this.make(t, { at: slot, key: fireKey(t.timerId, slot) });
    } catch (err) {
      if (!(err instanceof ContractException) || err.httpStatus >= 500) throw err;
      this.metrics.inc('baton_timer_fire_refused_total', { timer: t.timerId });
      this.logger.error(
        `timer ${t.timerId} slot ${new Date(slot).toISOString()} not fired: ${err.message}`,
      );
      return 'skipped';
    }
  }

  /**
   * A fire now, outside the schedule, asked for by a person: the overlap policy holds as for a
   * slot ('skipped' when it skips), and a refusal of the template is the caller's to see.
   */
  async now(t: TimerModel, requestKey: string, askedBy: string): Promise<Fired | 'skipped'> {
    const key = manualFireKey(t.timerId, requestKey);
    // The same request sent again answers its first fire, whatever fired since: it is no new
    // fire, so the overlap policy is not asked (it would cancel or refuse a later one).
    const first = await this.tasks.findByIdempotencyKey(t.tenant, key);
    if (first)
      return {
        taskId: first.taskId,
        created: false,
        run: first.repetition === RepetitionKind.TOPOLOGY,
        at: Date.parse(first.labels.fire_time ?? '') || first.createdAt,
      };
    if (await this.overlapSkips(t, t.lastTaskId, askedBy)) return 'skipped';
    return this.make(t, { at: this.clock.now(), key, askedBy });
  }

  /**
   * True when the previous fire's task is not finished and the policy is `skip`; with
   * `cancel_previous` that task (or run) is cancelled in the background and the fire goes on.
   */
  private async overlapSkips(
    t: TimerModel,
    previous: string | null,
    actor: string,
  ): Promise<boolean> {
    if (!previous || t.overlapPolicy === 'allow') return false;
    const prev = await this.tasks.get(previous).catch(() => undefined);
    if (!prev || prev.status === TaskStatus.FINISH) return false;
    if (t.overlapPolicy === 'skip') {
      this.metrics.inc('baton_timer_overlap_skips_total', { timer: t.timerId });
      return true;
    }
    // In the background: a task being driven answers 409 for a moment, and the fire must not wait.
    void this.cancelPrevious(t, prev, actor);
    this.metrics.inc('baton_timer_overlap_cancels_total', { timer: t.timerId });
    return false;
  }

  /**
   * Cancels the previous fire's task (while it is being driven, 409, it is tried again, up to
   * 10 s), or its topology run.
   */
  private async cancelPrevious(t: TimerModel, previous: TaskModel, actor: string): Promise<void> {
    // By what the previous fire made: the timer may have changed kind since.
    const cancel =
      previous.repetition === RepetitionKind.TOPOLOGY
        ? this.topologies.cancel(previous.taskId, actor)
        : this.actions.cancelWhenFree(previous.taskId, actor, 10_000);
    await cancel.catch((err: unknown) =>
      this.logger.warn(`timer ${t.timerId}: cancelling ${previous.taskId}: ${String(err)}`),
    );
  }

  private make(t: TimerModel, fire: Fire): Promise<Fired> {
    return isTopologyTemplate(t.template)
      ? this.startRun(t, t.template, fire)
      : this.createTask(t, t.template, fire);
  }

  /** The labels every fire carries: its timer, its instant, and `manual_fire` when a person asked. */
  private labels(t: TimerModel, fire: Fire): Record<string, string> {
    return {
      timer_id: t.timerId,
      fire_time: new Date(fire.at).toISOString(),
      ...(fire.askedBy ? { manual_fire: 'true' } : {}),
    };
  }

  private counted(t: TimerModel, created: boolean, fire: Fire): void {
    this.metrics.inc(created ? 'baton_timer_fires_total' : 'baton_timer_fire_duplicates_total', {
      timer: t.timerId,
    });
    // A slot fired ahead (its task waits for the slot's time) is on time.
    const late = Math.max(0, this.clock.now() - fire.at) / 1000;
    if (created && !fire.askedBy) this.metrics.observe('baton_timer_lateness_seconds', {}, late);
  }

  /** A run of the timer's topology, keyed by the fire like a task (one run per slot). */
  private async startRun(t: TimerModel, template: TopologyTemplate, fire: Fire): Promise<Fired> {
    const { name, version, input, labels, deadline_seconds } = template.topology;
    const { state, created } = await this.topologies.start(name, {
      input: input ?? {},
      version,
      deadlineSeconds: deadline_seconds,
      tenant: t.tenant,
      idempotencyKey: fire.key,
      labels: { ...(labels ?? {}), ...this.labels(t, fire) },
      actor: fire.askedBy ?? `producer:${this.config.instanceId}`,
    });
    this.counted(t, created, fire);
    return { taskId: state.run.runId, created, run: true, at: fire.at };
  }

  private async createTask(t: TimerModel, template: CreateTaskDto, fire: Fire): Promise<Fired> {
    // A fire ahead of its slot waits for it: the task starts at the slot, not when it was written.
    const ahead = fire.at > this.clock.now();
    const body = {
      ...template,
      ...(ahead
        ? {
            process_arg: {
              ...(template.process_arg ?? {}),
              start_time: new Date(fire.at).toISOString(),
            },
          }
        : {}),
      tenant: t.tenant,
      idempotency_key: fire.key,
      labels: { ...(template.labels ?? {}), ...this.labels(t, fire) },
    };
    const { task, created } = await this.tasks.create(body, {
      repetition: RepetitionKind.TIMED,
      actor: fire.askedBy ?? `producer:${this.config.instanceId}`,
    });
    this.counted(t, created, fire);
    return { taskId: task.taskId, created, run: false, at: fire.at };
  }
}
