import { Injectable } from '@nestjs/common';
import { ContractErrorCode, ContractException, TaskStatus } from '@baton/task-contract';
import { Clock, DEFAULT_TENANT } from '../common';
import { TransactionRunner } from '../database';
import { TaskFilter, TaskModel, TasksRepository, isUniqueViolation } from '../task-store';
import { CENTRE_TASK_TYPE } from '../task-types';
import { TasksService } from '../tasks';
import { NodeView } from './node-state';
import { TopologySpec } from './topology-definition';
import { viewsOf } from './topology-evaluator';
import { NodeTaskReader } from './node-task-reader';
import { TopologyDriver } from './topology-driver';
import { TopologyRun, TopologyRunsRepository, deadlineOf } from './topology-runs.repository';
import { TopologiesRepository, TopologyVersion } from './topologies.repository';
import { topologyNotFound } from './topologies.service';

export const runNotFound = (runId: string): ContractException =>
  new ContractException(ContractErrorCode.NOT_FOUND, `topology run ${runId} does not exist`, {
    run_id: runId,
  });

/** A run with its centre task and, when asked for, its nodes. */
export interface RunState {
  run: TopologyRun;
  centre: TaskModel;
  spec?: TopologySpec;
  nodes?: NodeView[];
}

export interface StartRun {
  input: Record<string, unknown>;
  tenant?: string;
  labels?: Record<string, string>;
  version?: number;
  idempotencyKey?: string;
  /** Who starts it, for the lifecycle log (default: the API). */
  actor?: string;
  /** This run's deadline, in place of the definition's. */
  deadlineSeconds?: number;
}

/** Starting runs, reading them, and what people may do to them. */
@Injectable()
export class TopologyRunsService {
  constructor(
    private readonly defs: TopologiesRepository,
    private readonly runs: TopologyRunsRepository,
    private readonly tasks: TasksRepository,
    private readonly creator: TasksService,
    private readonly driver: TopologyDriver,
    private readonly nodeTasks: NodeTaskReader,
    private readonly tx: TransactionRunner,
    private readonly clock: Clock,
  ) {}

  /** Starts a run of a definition; a repeated idempotency key answers the run it started. */
  async start(name: string, req: StartRun): Promise<{ state: RunState; created: boolean }> {
    const tenant = req.tenant ?? DEFAULT_TENANT;
    if (req.idempotencyKey) {
      const known = await this.tasks.findByIdempotencyKey(tenant, req.idempotencyKey);
      if (known) return { state: await this.get(known.taskId), created: false };
    }
    const def = await this.startable(name, tenant, req.version);
    const centre = this.creator.centre({
      name: def.name,
      version: def.version,
      tenant,
      input: req.input,
      labels: req.labels ?? {},
      idempotencyKey: req.idempotencyKey ?? null,
      parentTaskId: null,
      controlTaskId: null,
    });
    const run = this.runOf(def, centre, req.input, req.deadlineSeconds);
    try {
      await this.tx.run(async (m) => {
        await this.creator.insertWithin(m, [centre], req.actor ?? 'api');
        await this.runs.insertRun(m, run, centre.createdAt);
      });
    } catch (err) {
      if (req.idempotencyKey && isUniqueViolation(err)) {
        const winner = await this.tasks.findByIdempotencyKey(tenant, req.idempotencyKey);
        if (winner) return { state: await this.get(winner.taskId), created: false };
      }
      throw err;
    }
    await this.creator.committed([centre]);
    return { state: { run, centre }, created: true };
  }

  /**
   * The definition a run of `name` would start for `tenant`: refused (404) when there is none, or
   * when it is another tenant's (as its routes answer).
   */
  async startable(
    name: string,
    tenant: string,
    version?: number,
    start?: { input: Record<string, unknown>; labels: Record<string, string> },
  ): Promise<TopologyVersion> {
    if (start) this.creator.checkRunStart(start.input, start.labels);
    const def = await this.defs.get(name, version);
    if (!def || (def.tenant !== null && def.tenant !== tenant))
      throw topologyNotFound(name, version);
    return def;
  }

  private runOf(
    def: TopologyVersion,
    centre: TaskModel,
    input: Record<string, unknown>,
    deadlineSeconds: number | undefined,
  ): TopologyRun {
    return {
      runId: centre.taskId,
      name: def.name,
      version: def.version,
      tenant: centre.tenant,
      input,
      depth: 0,
      parentRunId: null,
      active: true,
      wakeAt: null,
      ...deadlineOf(deadlineSeconds ?? def.spec.deadline_seconds, centre.createdAt),
      createdAt: centre.createdAt,
    };
  }

  /** A run, its centre task and its graph (each node's status, tasks, timing, result). */
  async get(runId: string, withNodes = true): Promise<RunState> {
    const [run, centre] = await Promise.all([this.runs.get(runId), this.tasks.findById(runId)]);
    if (!run || !centre) throw runNotFound(runId);
    if (!withNodes) return { run, centre };
    const def = await this.defs.get(run.name, run.version);
    const rows = await this.runs.nodes(runId);
    const tasks = await this.nodeTasks.read(rows);
    const views = def ? [...viewsOf(def.spec, rows, tasks).values()] : [];
    return { run, centre, spec: def?.spec, nodes: views };
  }

  async list(
    filter: Omit<TaskFilter, 'taskType' | 'taskName'> & { name?: string },
    cursor: string | undefined,
    limit: number,
  ): Promise<{ items: RunState[]; nextCursor: string | null }> {
    const centres = await this.tasks.list(
      { ...filter, taskType: CENTRE_TASK_TYPE, taskName: filter.name },
      cursor,
      limit + 1,
    );
    const more = centres.length > limit;
    const page = more ? centres.slice(0, limit) : centres;
    const runs = await this.runs.getMany(page.map((t) => t.taskId));
    const items = page
      .filter((t) => runs.has(t.taskId))
      .map((centre) => ({ run: runs.get(centre.taskId) as TopologyRun, centre }));
    return { items, nextCursor: more ? page[page.length - 1].taskId : null };
  }

  /** Stops a run: no node starts any more, running node tasks are cancelled through the contract. */
  async cancel(runId: string, actor = 'api'): Promise<RunState> {
    const { centre } = await this.get(runId, false);
    if (!(await this.driver.cancelRun(runId, actor))) throw this.over(centre, 'cancel');
    return this.get(runId);
  }

  /** No node starts until `resume`; nodes already running go on. */
  async pause(runId: string): Promise<RunState> {
    return this.move(runId, TaskStatus.RUNNING, TaskStatus.PAUSE, 'paused: no node starts');
  }

  async resume(runId: string): Promise<RunState> {
    return this.move(runId, TaskStatus.PAUSE, TaskStatus.RUNNING, 'continued');
  }

  private async move(
    runId: string,
    from: TaskStatus,
    to: TaskStatus,
    reason: string,
  ): Promise<RunState> {
    const { centre } = await this.get(runId, false);
    if (centre.status !== from || centre.cancelRequested)
      throw this.over(centre, to === TaskStatus.PAUSE ? 'pause' : 'continue');
    const moved = await this.tasks.apply(
      centre,
      {
        to,
        patch: { pausedFrom: to === TaskStatus.PAUSE ? from : null },
        reason,
        actor: 'api',
      },
      this.clock.now(),
    );
    if (!moved) return this.move(runId, from, to, reason);
    return this.get(runId);
  }

  /** Ends the wait of the nodes waiting for this signal; `data` becomes their result. */
  async signal(runId: string, signal: string, data: Record<string, unknown>): Promise<RunState> {
    const { centre } = await this.get(runId, false);
    if (centre.status === TaskStatus.FINISH) throw this.over(centre, 'signal');
    const now = this.clock.now();
    const ended = await this.tx.run(async (m) => {
      await this.runs.lock(m, runId);
      const waiting = (await this.runs.nodes(runId, m)).filter(
        (r) => r.state === 'waiting' && r.result?.signal === signal,
      );
      for (const r of waiting)
        await this.runs.moveNode(
          m,
          runId,
          r.key,
          r.item,
          'waiting',
          {
            state: 'done',
            result: { signal, data },
          },
          now,
        );
      return waiting.length;
    });
    if (ended === 0)
      throw new ContractException(
        ContractErrorCode.ILLEGAL_TRANSITION,
        `no node of run ${runId} is waiting for signal ${signal}`,
        { run_id: runId, signal },
      );
    await this.driver.evaluate(runId);
    return this.get(runId);
  }

  private over(centre: TaskModel, action: string): ContractException {
    return new ContractException(
      ContractErrorCode.ILLEGAL_TRANSITION,
      `cannot ${action} topology run ${centre.taskId}: it is ${centre.status}${centre.cancelRequested ? ' (cancel requested)' : ''}`,
      { run_id: centre.taskId, status: centre.status },
    );
  }
}
