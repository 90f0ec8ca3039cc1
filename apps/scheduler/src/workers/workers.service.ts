import { Inject, Injectable } from '@nestjs/common';
import {
  ContractErrorCode,
  ContractException,
  compareVersions,
  outgoingUrlProblem,
} from '@baton/task-contract';
import { Clock } from '../common';
import { SCHEDULER_CONFIG, SchedulerConfig } from '../config';
import { Metrics } from '../metrics';
import { TaskTypesService, WorkerRules, rampSide, versionExclusion } from '../task-types';
import { ContractTimingDto, RegisterWorkerDto } from './dto/worker.dto';
import { WorkerHealth, exclusionsOf, healthOf } from './worker-eligibility';
import { WorkerModel } from './worker.model';
import { WorkersRepository } from './workers.repository';

/** How old the in-memory view of the registry may get before it is read again. */
const REFRESH_MS = 1000;

export type { WorkerHealth } from './worker-eligibility';

/** A worker as the API shows it: its row, health, load here, and why it is left out of types. */
export interface WorkerView {
  worker: WorkerModel;
  health: WorkerHealth;
  inflight: number;
  /** Per type it serves: why new tasks of the type do not go to it, or null when they may. */
  excluded: Record<string, string | null>;
}

const normalizeUrl = (url: string): string => url.replace(/\/+$/, '');

/**
 * The worker registry and router: workers register and heartbeat; dispatch picks a healthy
 * instance of the type with free capacity (least loaded first) that the type's version rules
 * and its ramp let take the task; a node failing repeatedly is blacklisted for a cool-down.
 * People drain a worker or blacklist it by hand (WorkerControl). Capacity is counted per
 * scheduler instance.
 */
@Injectable()
export class WorkersService {
  private cache: WorkerModel[] = [];
  private cachedAt = 0;
  private readonly inflight = new Map<string, number>();
  private turn = 0;

  constructor(
    private readonly repo: WorkersRepository,
    private readonly types: TaskTypesService,
    private readonly clock: Clock,
    @Inject(SCHEDULER_CONFIG) private readonly config: SchedulerConfig,
    private readonly metrics: Metrics,
  ) {}

  /** The oldest heartbeat of a worker that still counts as live (not stale) now. */
  liveSince(): number {
    return this.clock.now() - this.config.workers.staleAfterMs;
  }

  async register(dto: RegisterWorkerDto): Promise<WorkerView> {
    // The scheduler will call this URL with every task of these types: never somewhere internal
    // the operator has not allowed (a cloud's metadata service answers at 169.254.169.254).
    // Names are accepted (service names inside a cluster are how workers are found).
    const problem = outgoingUrlProblem(
      dto.url,
      this.config.outgoing.workers,
      'accept',
      'BATON_WORKER_NETWORKS',
    );
    if (problem)
      throw new ContractException(
        ContractErrorCode.VALIDATION_FAILED,
        `url ${problem} (BATON_WORKER_NETWORKS: ${this.config.outgoing.workers.text || 'none'})`,
        { url: dto.url },
      );
    const contractVersion = dto.contract_version ?? '1.0.0';
    const min = this.config.workers.minContractVersion;
    if (compareVersions(contractVersion, min) < 0) {
      this.metrics.inc('baton_worker_registrations_refused_total', { reason: 'contract_version' });
      throw new ContractException(
        ContractErrorCode.CONTRACT_VERSION_UNSUPPORTED,
        `worker ${dto.worker_id} speaks worker contract ${contractVersion}${dto.contract_version ? '' : ' (its registration names no contract_version, as workers of 1.0.0 did)'}; this scheduler accepts ${min} or later (BATON_MIN_WORKER_CONTRACT): upgrade the worker, or lower the setting knowing what the versions between add (the changelog of docs/worker-contract.md)`,
        { worker_id: dto.worker_id, contract_version: contractVersion, min_contract_version: min },
      );
    }
    const now = this.clock.now();
    const previous = await this.repo.find(dto.worker_id);
    const model: WorkerModel = {
      workerId: dto.worker_id,
      url: normalizeUrl(dto.url),
      taskTypes: dto.task_types.map((t) => t.task_type),
      version: dto.version,
      contractVersion,
      capacity: dto.capacity,
      lastHeartbeatAt: now,
      // A registration comes from a (re)started process: the failures of the one before it say
      // nothing about it, so its record starts clean.
      consecutiveFailures: 0,
      blacklistedUntil: null,
      registeredAt: previous?.registeredAt ?? now,
      // What people set stays: a drained worker that restarts is still drained.
      drainingSince: previous?.drainingSince ?? null,
      manualBlacklist: previous?.manualBlacklist ?? null,
    };
    // Every schema is checked before any type is saved: a refused registration changes nothing.
    for (const t of dto.task_types)
      this.types.checkSchemas(t.task_type, {
        params: t.params_schema ?? null,
        result: t.result_schema ?? null,
      });
    for (const t of dto.task_types)
      await this.types.declare(t.task_type, t.blocking, t.implements, t.defaults, {
        params: t.params_schema ?? null,
        result: t.result_schema ?? null,
      });
    await this.repo.saveRegistration(model);
    this.cachedAt = 0;
    return this.view(model, now, await this.rulesOf(model.taskTypes));
  }

  /**
   * The timing this scheduler holds a worker of `taskTypes` to (the contract's "Timing"): the
   * registration heartbeat, the poll of RUNNING attempts, and per type the heartbeat timeout.
   * The intervals asked for are a third of the bounds, so two lost beats are not yet a loss.
   */
  async timing(taskTypes: string[]): Promise<ContractTimingDto> {
    const types: ContractTimingDto['task_types'] = [];
    for (const name of taskTypes) {
      const type = await this.types.find(name);
      if (!type) continue;
      types.push({
        task_type: name,
        heartbeat_interval_ms: Math.max(1, Math.floor(type.heartbeatTimeoutMs / 3)),
        heartbeat_timeout_ms: type.heartbeatTimeoutMs,
      });
    }
    const stale = this.config.workers.staleAfterMs;
    return {
      heartbeat_interval_ms: Math.max(1, Math.floor(stale / 3)),
      stale_after_ms: stale,
      poll_interval_ms: this.config.checker.pollIntervalMs,
      task_types: types,
    };
  }

  async heartbeat(workerId: string): Promise<void> {
    if (!(await this.repo.heartbeat(workerId, this.clock.now()))) {
      throw new ContractException(
        ContractErrorCode.NOT_FOUND,
        `worker ${workerId} is not registered; register again`,
        { worker_id: workerId },
      );
    }
  }

  async remove(workerId: string): Promise<void> {
    if (!(await this.repo.remove(workerId))) throw this.notRegistered(workerId);
    this.cachedAt = 0;
  }

  async list(): Promise<WorkerView[]> {
    const workers = await this.repo.findAll();
    const rules = await this.rulesOf(workers.flatMap((w) => w.taskTypes));
    const now = this.clock.now();
    return workers.map((w) => this.view(w, now, rules));
  }

  /** One worker as the API shows it, read from the database. */
  async get(workerId: string): Promise<WorkerView> {
    const w = await this.repo.find(workerId);
    if (!w) throw this.notRegistered(workerId);
    return this.view(w, this.clock.now(), await this.rulesOf(w.taskTypes));
  }

  health(w: WorkerModel, now: number): WorkerHealth {
    return healthOf(w, now, this.config.workers.staleAfterMs);
  }

  /** The registry changed here: the next pick reads it again. */
  forget(): void {
    this.cachedAt = 0;
  }

  notRegistered(workerId: string): ContractException {
    return new ContractException(
      ContractErrorCode.NOT_FOUND,
      `worker ${workerId} is not registered`,
      { worker_id: workerId },
    );
  }

  private view(
    worker: WorkerModel,
    now: number,
    rules: ReadonlyMap<string, WorkerRules | null>,
  ): WorkerView {
    const health = this.health(worker, now);
    return {
      worker,
      health,
      inflight: this.inflight.get(worker.workerId) ?? 0,
      excluded: exclusionsOf(worker, health, now, (t) => rules.get(t) ?? null),
    };
  }

  private async rulesOf(taskTypes: string[]): Promise<Map<string, WorkerRules | null>> {
    const rules = new Map<string, WorkerRules | null>();
    for (const t of new Set(taskTypes))
      rules.set(t, (await this.types.find(t))?.workerRules ?? null);
    return rules;
  }

  /** True when `url` is the base URL of a registered worker serving `taskType`. */
  async isRegisteredUrl(taskType: string, url: string): Promise<boolean> {
    const wanted = normalizeUrl(url);
    return (await this.snapshot()).some((w) => w.url === wanted && w.taskTypes.includes(taskType));
  }

  /**
   * The worker for a new attempt of task `taskId`: one of the type that is healthy, neither
   * draining nor blacklisted by hand, whose version the type's rules allow, on the side of the
   * type's ramp the task falls on, with a free slot, least loaded first; undefined when none.
   * `url` pins the choice to one worker (the ramp then has no say); `exclude` skips instances
   * that just failed the task.
   */
  async pick(
    taskType: string,
    opts: { taskId: string; url?: string | null; exclude?: readonly string[] },
  ): Promise<WorkerModel | undefined> {
    const now = this.clock.now();
    const url = opts.url ? normalizeUrl(opts.url) : undefined;
    const rules = (await this.types.find(taskType))?.workerRules ?? null;
    const allowed = (await this.snapshot()).filter(
      (w) =>
        w.taskTypes.includes(taskType) &&
        this.health(w, now) === 'healthy' &&
        w.drainingSince === null &&
        versionExclusion(w.version, rules) === null &&
        (!url || w.url === url) &&
        !opts.exclude?.includes(w.workerId),
    );
    return this.leastLoaded(url ? allowed : rampSide(allowed, rules, opts.taskId));
  }

  /**
   * The worker at `url` for an attempt already bound to it (a re-drive after a crash), if it is
   * healthy and has a free slot. A drain and the version rules only keep new attempts away: the
   * attempt it has goes on there.
   */
  async pickBound(taskType: string, url: string): Promise<WorkerModel | undefined> {
    const now = this.clock.now();
    const wanted = normalizeUrl(url);
    return this.leastLoaded(
      (await this.snapshot()).filter(
        (w) =>
          w.taskTypes.includes(taskType) && this.health(w, now) === 'healthy' && w.url === wanted,
      ),
    );
  }

  private leastLoaded(workers: readonly WorkerModel[]): WorkerModel | undefined {
    const load = (w: WorkerModel): number => (this.inflight.get(w.workerId) ?? 0) / w.capacity;
    const free = workers.filter((w) => load(w) < 1);
    if (free.length === 0) return undefined;
    const least = Math.min(...free.map(load));
    const best = free.filter((w) => load(w) === least);
    return best[this.turn++ % best.length];
  }

  /** The registered worker with this id (from the cached view of the registry). */
  async find(workerId: string): Promise<WorkerModel | undefined> {
    return (await this.snapshot()).find((w) => w.workerId === workerId);
  }

  acquireSlot(workerId: string): void {
    this.inflight.set(workerId, (this.inflight.get(workerId) ?? 0) + 1);
  }

  releaseSlot(workerId: string): void {
    const n = (this.inflight.get(workerId) ?? 0) - 1;
    if (n <= 0) this.inflight.delete(workerId);
    else this.inflight.set(workerId, n);
  }

  /** A call to the worker failed at the transport level (down, timeout, 5xx). */
  async reportFailure(workerId: string): Promise<void> {
    const w = (await this.snapshot()).find((x) => x.workerId === workerId);
    if (!w) return;
    w.consecutiveFailures += 1;
    if (w.consecutiveFailures >= this.config.workers.blacklistAfter) {
      w.blacklistedUntil = this.clock.now() + this.config.workers.blacklistMs;
      w.consecutiveFailures = 0;
    }
    await this.repo.recordOutcome(workerId, w.consecutiveFailures, w.blacklistedUntil);
  }

  /** A call succeeded: the failure streak ends (written only when there was one). */
  async reportSuccess(workerId: string): Promise<void> {
    const w = (await this.snapshot()).find((x) => x.workerId === workerId);
    if (!w || w.consecutiveFailures === 0) return;
    w.consecutiveFailures = 0;
    await this.repo.recordOutcome(workerId, 0, w.blacklistedUntil);
  }

  private async snapshot(): Promise<WorkerModel[]> {
    const now = this.clock.now();
    if (now - this.cachedAt > REFRESH_MS) {
      this.cache = await this.repo.findAll();
      this.cachedAt = now;
    }
    return this.cache;
  }
}
