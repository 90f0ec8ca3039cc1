import { Injectable } from '@nestjs/common';
import { TaskStatus } from '@baton/task-contract';
import { EntityManager } from 'typeorm';
import { TasksRepository } from '../task-store';
import { NodeRow, NodeTask, toNodeTask } from './node-state';

/** Finished node tasks kept in memory. */
const FINISHED_KEPT = 200_000;

/**
 * Reads the tasks of a run's nodes for an evaluation, which needs every one of them (a thousand
 * for a fan-out of a thousand, at each evaluation). A task seen in FINISH is kept with its version
 * and read again only when the version moved: every change of a finished task is a transition
 * (heartbeats, progress and cancel requests reach only running ones), so the version tells.
 */
@Injectable()
export class NodeTaskReader {
  private readonly finished = new Map<string, { version: number; task: NodeTask }>();

  constructor(private readonly tasks: TasksRepository) {}

  /** The tasks of the rows' nodes; those in `known` are taken from it, not read again. */
  async read(
    rows: readonly NodeRow[],
    m?: EntityManager,
    known?: ReadonlyMap<string, NodeTask>,
  ): Promise<Map<string, NodeTask>> {
    const out = new Map<string, NodeTask>();
    const read: string[] = [];
    const check: string[] = [];
    for (const r of rows) {
      if (r.taskId === null) continue;
      const k = known?.get(r.taskId);
      if (k) out.set(r.taskId, k);
      else (this.finished.has(r.taskId) ? check : read).push(r.taskId);
    }
    if (check.length > 0)
      for (const r of await this.tasks.columnsOf(check, ['version'], m)) {
        const id = String(r.task_id);
        const kept = this.finished.get(id);
        if (kept && kept.version === Number(r.version)) out.set(id, kept.task);
        else read.push(id);
      }
    for (const t of await this.tasks.findByIds(read, m)) {
      const task = toNodeTask(t);
      out.set(t.taskId, task);
      if (t.status !== TaskStatus.FINISH) this.finished.delete(t.taskId);
      else {
        // Bounded: dropped whole now and then, read again as needed.
        if (this.finished.size >= FINISHED_KEPT) this.finished.clear();
        this.finished.set(t.taskId, { version: t.version, task });
      }
    }
    return out;
  }
}
