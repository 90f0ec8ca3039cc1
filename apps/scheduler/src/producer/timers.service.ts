import { Injectable } from '@nestjs/common';
import {
  ContractErrorCode,
  ContractException,
  RepetitionKind,
  TaskStatus,
} from '@baton/task-contract';
import { Clock, IdGenerator } from '../common';
import { TaskActionsService, TasksService } from '../tasks';
import { TopologyRunsService } from '../topologies';
import { CreateTimerDto, ScheduleDto, UpdateTimerDto } from './dto/timer.dto';
import { ProducerService } from './producer.service';
import { Fired, TimerFiring } from './timer-firing';
import { Schedule, ScheduleError, firstFire, validateCron } from './schedule';
import { TimerModel, TimerTemplate, isTopologyTemplate, upcomingFires } from './timer.model';
import { TimersRepository } from './timers.repository';

const invalid = (message: string, data?: Record<string, unknown>): ContractException =>
  new ContractException(ContractErrorCode.VALIDATION_FAILED, message, data);

const tenantOf = (t: TimerTemplate): string =>
  (isTopologyTemplate(t) ? t.topology.tenant : t.tenant) ?? 'default';

const withTenant = (t: TimerTemplate, tenant: string): TimerTemplate =>
  isTopologyTemplate(t) ? { topology: { ...t.topology, tenant } } : { ...t, tenant };

/** Compare-and-sets an update makes before it answers 409. */
const UPDATE_TRIES = 5;

/** The rules of `/v1/timers`: what a definition may say, and where its next slot is. */
@Injectable()
export class TimersService {
  constructor(
    private readonly repo: TimersRepository,
    private readonly tasks: TasksService,
    private readonly actions: TaskActionsService,
    private readonly topologies: TopologyRunsService,
    private readonly producer: ProducerService,
    private readonly firing: TimerFiring,
    private readonly ids: IdGenerator,
    private readonly clock: Clock,
  ) {}

  async create(dto: CreateTimerDto): Promise<TimerModel> {
    const timer = await this.build(dto);
    await this.repo.insert(timer);
    this.producer.track(timer);
    return timer;
  }

  /**
   * The timer a create body would make, checked exactly as `create` checks it, and not stored:
   * with its next fires (the Producer's own schedule code), for a preview as the body is typed.
   */
  async preview(dto: CreateTimerDto, count: number): Promise<number[]> {
    return upcomingFires(await this.build(dto), count);
  }

  private async build(dto: CreateTimerDto): Promise<TimerModel> {
    const now = this.clock.now();
    const startAt = dto.start_at ? Date.parse(dto.start_at) : null;
    const endAt = dto.end_at ? Date.parse(dto.end_at) : null;
    const schedule = this.schedule(dto.schedule, startAt, now);
    this.checkWindow(startAt, endAt);
    const template = this.templateOf(dto);
    const tenant = tenantOf(template);
    await this.checkTemplate(template, tenant);
    const base = { schedule, startAt, endAt };
    const timer: TimerModel = {
      timerId: this.ids.taskId(),
      name: dto.name,
      tenant,
      ...base,
      enabled: dto.enabled ?? true,
      overlapPolicy: dto.overlap_policy ?? 'allow',
      misfirePolicy: dto.misfire_policy ?? 'fire_once',
      misfireGraceMs: dto.misfire_grace_ms ?? 5000,
      template,
      nextFireAt: firstFire(schedule, base, now),
      lastFireAt: null,
      lastTaskId: null,
      fireCount: 0,
      misfireCount: 0,
      skipCount: 0,
      version: 0,
      createdAt: now,
      updatedAt: now,
    };
    if (timer.nextFireAt === null)
      throw invalid('the schedule has no slot between start_at and end_at');
    return timer;
  }

  list(tenant?: string): Promise<TimerModel[]> {
    return this.repo.list(tenant);
  }

  async get(timerId: string): Promise<TimerModel> {
    const t = await this.repo.find(timerId);
    if (!t)
      throw new ContractException(ContractErrorCode.NOT_FOUND, `timer ${timerId} does not exist`, {
        timer_id: timerId,
      });
    return t;
  }

  /**
   * Applies the change to the timer as it is now. A fire that lands between the read and the
   * write only moved next_fire_at and the counts, which the change is made over again: the caller
   * gets 409 only when the timer kept changing under it UPDATE_TRIES times in a row.
   */
  async update(timerId: string, dto: UpdateTimerDto): Promise<TimerModel> {
    for (let tries = 1; ; tries++) {
      const stored = await this.updateOnce(timerId, dto);
      if (stored) return stored;
      if (tries >= UPDATE_TRIES)
        throw new ContractException(
          ContractErrorCode.VERSION_CONFLICT,
          `timer ${timerId} kept changing while this change was made (a fire or another change won ${UPDATE_TRIES} times); send it again`,
          { timer_id: timerId },
        );
    }
  }

  /** One compare-and-set of the change; undefined when the timer changed meanwhile. */
  private async updateOnce(timerId: string, dto: UpdateTimerDto): Promise<TimerModel | undefined> {
    const t = await this.get(timerId);
    const now = this.clock.now();
    // null removes a bound; absent keeps it.
    const instant = (v: string | null): number | null => (v === null ? null : Date.parse(v));
    const startAt = dto.start_at !== undefined ? instant(dto.start_at) : t.startAt;
    const endAt = dto.end_at !== undefined ? instant(dto.end_at) : t.endAt;
    const schedule = dto.schedule ? this.schedule(dto.schedule, startAt, now) : t.schedule;
    this.checkWindow(startAt, endAt);
    const template = dto.task || dto.topology ? this.templateOf(dto) : undefined;
    if (template) {
      // The fire key is unique per tenant: another tenant would let a fired slot fire again.
      const asked = isTopologyTemplate(template) ? template.topology.tenant : template.tenant;
      if (asked !== undefined && asked !== t.tenant)
        throw invalid(
          `a timer's tenant cannot change (it is ${t.tenant}); create a new timer for ${asked}`,
        );
      await this.checkTemplate(template, t.tenant);
    }
    const enabled = dto.enabled ?? t.enabled;
    const base = { schedule, startAt, endAt };
    // A new schedule or window, or a timer enabled again, starts from the next slot: the slots
    // while it was off are not misfires.
    const restart =
      dto.schedule !== undefined ||
      dto.start_at !== undefined ||
      dto.end_at !== undefined ||
      (enabled && !t.enabled);
    const next: TimerModel = {
      ...t,
      ...base,
      name: dto.name ?? t.name,
      template: template ? withTenant(template, t.tenant) : t.template,
      enabled,
      overlapPolicy: dto.overlap_policy ?? t.overlapPolicy,
      misfirePolicy: dto.misfire_policy ?? t.misfirePolicy,
      misfireGraceMs: dto.misfire_grace_ms ?? t.misfireGraceMs,
      nextFireAt: restart ? firstFire(schedule, base, now) : t.nextFireAt,
      updatedAt: now,
    };
    const stored = await this.repo.replace(t, next);
    if (!stored) return undefined;
    this.producer.track(stored);
    // A timer turned off fires no slot after that: fires written ahead of their slot are withdrawn.
    // (A changed timer keeps them: each fire's key is its slot, and a withdrawn slot fired again
    // would find its cancelled task and never run.)
    if (!enabled && t.enabled) await this.withdrawEarlyFires(timerId, t.tenant);
    return stored;
  }

  /**
   * Fires the timer now, outside its schedule ("run now"), enabled or not: its overlap policy
   * holds (409 when it skips), a template refused now answers as a create would, and the fire
   * becomes the timer's last task (what the next slot's overlap policy looks at). The scheduled
   * slots and their counts are left as they are. `requestKey` makes a request sent again answer
   * the first fire.
   */
  async runNow(timerId: string, requestKey: string, actor: string): Promise<Fired> {
    const t = await this.get(timerId);
    const fired = await this.firing.now(t, requestKey, actor);
    if (fired === 'skipped')
      throw new ContractException(
        ContractErrorCode.ILLEGAL_TRANSITION,
        `timer ${timerId} did not fire: its previous fire (${t.lastTaskId ?? '?'}) is not finished and its overlap policy is skip`,
        { timer_id: timerId, previous: t.lastTaskId, overlap_policy: t.overlapPolicy },
      );
    if (fired.created) await this.keepLast(timerId, fired.taskId);
    return fired;
  }

  /**
   * Records a fire made outside the Producer as the timer's last task (compare-and-set, retried),
   * unless a newer fire is recorded already: ids grow with time, and the last task is the newest.
   */
  private async keepLast(timerId: string, taskId: string): Promise<void> {
    for (let tries = 1; tries <= UPDATE_TRIES; tries++) {
      const t = await this.repo.find(timerId);
      if (!t || (t.lastTaskId !== null && t.lastTaskId >= taskId)) return;
      const stored = await this.repo.replace(t, { ...t, lastTaskId: taskId });
      if (stored) {
        this.producer.track(stored);
        return;
      }
    }
  }

  async remove(timerId: string): Promise<void> {
    const t = await this.repo.find(timerId);
    if (!t || !(await this.repo.remove(timerId)))
      throw new ContractException(ContractErrorCode.NOT_FOUND, `timer ${timerId} does not exist`, {
        timer_id: timerId,
      });
    this.producer.untrack(timerId);
    await this.withdrawEarlyFires(timerId, t.tenant);
  }

  /**
   * Cancels the fires of a timer that were written ahead of their slot (BATON_PRODUCER_LEAD_MS)
   * and have not started: a timer disabled or deleted fires no slot after that.
   */
  private async withdrawEarlyFires(timerId: string, tenant: string): Promise<void> {
    const now = this.clock.now();
    const { items } = await this.tasks.list({
      tenant,
      label: `timer_id:${timerId}`,
      status: [TaskStatus.INIT, TaskStatus.POSTPONE],
      limit: 100,
    });
    for (const task of items)
      if (task.startTime !== null && task.startTime > now)
        await this.actions
          .cancelWhenFree(task.taskId, `api:timer ${timerId} changed`, 500)
          .catch(() => undefined);
  }

  private schedule(dto: ScheduleDto, startAt: number | null, now: number): Schedule {
    const allowed: Record<ScheduleDto['kind'], (keyof ScheduleDto)[]> = {
      cron: ['kind', 'cron', 'time_zone'],
      interval: ['kind', 'every_ms', 'at'],
      once: ['kind', 'at'],
    };
    const extra = (Object.keys(dto) as (keyof ScheduleDto)[]).filter(
      (k) => dto[k] !== undefined && !allowed[dto.kind].includes(k),
    );
    if (extra.length > 0)
      throw invalid(`schedule of kind ${dto.kind} does not take ${extra.join(', ')}`);
    switch (dto.kind) {
      case 'cron': {
        if (!dto.cron) throw invalid('schedule.cron is required for kind cron');
        const timeZone = dto.time_zone ?? 'UTC';
        try {
          validateCron(dto.cron, timeZone, this.clock.now());
        } catch (err) {
          if (err instanceof ScheduleError) throw invalid(`schedule: ${err.message}`);
          throw err;
        }
        return { kind: 'cron', cron: dto.cron.trim(), timeZone };
      }
      case 'interval': {
        if (!dto.every_ms) throw invalid('schedule.every_ms is required for kind interval');
        const anchor = dto.at ? Date.parse(dto.at) : (startAt ?? now + dto.every_ms);
        return { kind: 'interval', everyMs: dto.every_ms, anchor };
      }
      case 'once':
        if (!dto.at) throw invalid('schedule.at is required for kind once');
        return { kind: 'once', at: Date.parse(dto.at) };
    }
  }

  private checkWindow(startAt: number | null, endAt: number | null): void {
    if (startAt !== null && endAt !== null && endAt < startAt)
      throw invalid('end_at is before start_at');
  }

  /** Exactly one of a task and a topology. */
  private templateOf(dto: UpdateTimerDto): TimerTemplate {
    if ((dto.task === undefined) === (dto.topology === undefined))
      throw invalid(
        'a timer fires a task or a topology run: give exactly one of task and topology',
      );
    return dto.task ?? { topology: dto.topology as NonNullable<UpdateTimerDto['topology']> };
  }

  /**
   * The template must create a task today (type registered, http_url, sizes), or start a run of a
   * definition the tenant has; the key is ours.
   */
  private async checkTemplate(template: TimerTemplate, tenant: string): Promise<void> {
    if (isTopologyTemplate(template)) {
      const { name, version, input, labels } = template.topology;
      const start = { input: input ?? {}, labels: labels ?? {} };
      await this.topologies.startable(name, tenant, version, start).catch((err: unknown) => {
        throw err instanceof ContractException
          ? invalid(`topology: ${err.message}`, { topology: name })
          : err;
      });
      return;
    }
    const task = { ...template, tenant };
    if (task.idempotency_key !== undefined)
      throw invalid(
        'task.idempotency_key is set by the Producer (timer:<id>:<slot>); leave it out',
      );
    try {
      await this.tasks.check(task, RepetitionKind.TIMED);
    } catch (err) {
      if (err instanceof ContractException)
        throw new ContractException(err.code, `task: ${err.message}`, err.data);
      throw err;
    }
  }
}
