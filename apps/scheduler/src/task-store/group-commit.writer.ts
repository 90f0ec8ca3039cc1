import { Injectable, Optional } from '@nestjs/common';
import { TaskStatus, assertTransition } from '@baton/task-contract';
import { crashArmed, crashPoint } from '../common';
import { DataSource, EntityManager } from 'typeorm';
import { TransactionRunner } from '../database';
import { Metrics } from '../metrics';
import { isConnectionError, SqlRunner } from './sql-runner';
import { CasRow, TaskChange, casRow, setBytes, statusPath } from './task-change';
import { TaskLogRepository, WonChange } from './task-log.repository';
import { TaskModel } from './task.model';

/** A change waiting for its group's commit. */
interface PendingChange {
  task: TaskModel;
  change: TaskChange;
  now: number;
  resolve(next: TaskModel | undefined): void;
  reject(err: unknown): void;
}

type Item = Pick<PendingChange, 'task' | 'change' | 'now'>;

/** A group's one-statement compare-and-set did not match every row: roll back, go row by row. */
class GroupRaceLost extends Error {
  constructor() {
    super('a change in the group lost its compare-and-set');
  }
}

/** Largest JSON content (results, errors, progress) of a group written as one UPDATE. */
const ONE_STATEMENT_MAX_BYTES = 1_000_000;
/** Most changes in one group commit. */
const MAX_GROUP = 128;
/** Group writers at once on MySQL (each holds one pooled connection while it writes). */
const MYSQL_WRITERS = 4;
/**
 * While a group is being written, another writer starts only for at least this many changes:
 * the rest wait for a writer to free (a commit's time) and go with the changes that came meanwhile.
 * Starting a writer for every change or two made groups of a few rows under load: at 128 drives
 * at once, twice the statements and commits per task of 256.
 */
const MIN_EXTRA_GROUP = 48;

/**
 * Writes task changes: each a compare-and-set on (task_id, version) with its log in one
 * transaction (docs/architecture.md). Group commit: changes that arrive while earlier ones are being
 * written go to the database together, in one transaction — each still its own compare-and-set,
 * the event and attempt rows of all of them in one INSERT each, one commit (one fsync) for all.
 */
@Injectable()
export class GroupCommitWriter {
  /** Changes waiting for a writer. */
  private readonly pending: PendingChange[] = [];
  private writers = 0;
  /** Writers at once: SQLite has one connection; MySQL overlaps a few groups. */
  private readonly maxWriters: number;

  constructor(
    private readonly db: DataSource,
    private readonly tx: TransactionRunner,
    private readonly sql: SqlRunner,
    private readonly log: TaskLogRepository,
    /** Counts groups whose one-statement compare-and-set missed a row (written again row by row). */
    @Optional() private readonly metrics: Metrics = new Metrics(),
  ) {
    this.maxWriters = db.options.type === 'better-sqlite3' ? 1 : MYSQL_WRITERS;
  }

  /**
   * Applies a change if the task is still at `task.version`. The status move must be allowed by
   * the transition table. Returns the task after the change, or undefined when someone else
   * changed it first (nothing written). The promise settles only after the commit that holds the
   * change, so no step goes on from an unwritten row.
   */
  async apply(task: TaskModel, change: TaskChange, now: number): Promise<TaskModel | undefined> {
    const path = statusPath(task.status, change);
    for (let i = 1; i < path.length; i++) assertTransition(path[i - 1], path[i]);
    return new Promise((resolve, reject) => {
      this.pending.push({ task, change, now, resolve, reject });
      this.pump();
    });
  }

  /**
   * Whether a group's row updates may go as one statement: on MySQL (a round trip saved per
   * change), when each change is of a different task (a second change of one task depends on the
   * first's outcome), and while the statement stays small (see applyMany). Not on SQLite: its one connection is shared, so a write made meanwhile outside the group
   * would be undone with it when a lost race rolls the group back.
   */
  private oneStatement(batch: readonly PendingChange[]): boolean {
    if (this.db.options.type === 'better-sqlite3') return false;
    return new Set(batch.map((b) => b.task.taskId)).size === batch.length;
  }

  /** Starts writers while there is work and a free one: alone at low load, batched under load. */
  private pump(): void {
    while (
      this.writers < this.maxWriters &&
      this.pending.length > 0 &&
      (this.writers === 0 || this.pending.length >= MIN_EXTRA_GROUP)
    ) {
      const batch = this.pending.splice(0, MAX_GROUP);
      this.writers++;
      void this.write(batch).finally(() => {
        this.writers--;
        this.pump();
      });
    }
  }

  private async write(batch: PendingChange[]): Promise<void> {
    if (batch.length > 1) {
      let results: (TaskModel | undefined)[] | undefined;
      try {
        try {
          results = await this.tx.run((m) => this.applyMany(m, batch, this.oneStatement(batch)));
        } catch (err) {
          if (!(err instanceof GroupRaceLost)) throw err;
          // Some change lost its race: the same group again, row by row.
          this.metrics.inc('baton_group_commit_retries_total');
          results = await this.tx.run((m) => this.applyMany(m, batch));
        }
      } catch (err) {
        // The database is gone: every change fails now, rather than each after its own timeout.
        if (isConnectionError(err)) {
          for (const p of batch) p.reject(err);
          return;
        }
        // Anything else rolled the whole group back: each change is then tried alone, so one bad
        // change (or a deadlock between groups) fails only its own caller.
      }
      if (results) {
        this.committed(batch, results);
        batch.forEach((p, i) => p.resolve(results[i]));
        return;
      }
    }
    for (const p of batch) {
      try {
        const next = await this.applyAlone(p.task, p.change, p.now);
        this.committed([p], [next]);
        p.resolve(next);
      } catch (err) {
        p.reject(err);
      }
    }
  }

  /** After a commit (the change feed's listeners were told by the commit hook): a test may die here. */
  private committed(
    batch: readonly Pick<PendingChange, 'task'>[],
    results: readonly (TaskModel | undefined)[],
  ): void {
    if (!results.some(Boolean)) return;
    if (
      crashArmed('after-final-transition') &&
      results.some(
        (r, i) => r?.status === TaskStatus.FINISH && batch[i].task.status !== TaskStatus.FINISH,
      )
    )
      crashPoint('after-final-transition');
  }

  private applyAlone(
    task: TaskModel,
    change: TaskChange,
    now: number,
  ): Promise<TaskModel | undefined> {
    // A change that logs nothing and touches no attempt is one statement: no transaction needed.
    if (statusPath(task.status, change).length === 1 && !change.attemptStart && !change.note)
      return this.tx.single((m) => this.applyMany(m, [{ task, change, now }]).then((r) => r[0]));
    return this.tx.run((m) => this.applyMany(m, [{ task, change, now }]).then((r) => r[0]));
  }

  /**
   * The changes in one transaction: every compare-and-set first (in task order, so two groups
   * lock rows in the same order; `together`: as one statement, which locks through the primary
   * key in that order too), then the log of those that won.
   */
  private async applyMany(
    m: EntityManager,
    batch: readonly Item[],
    together = false,
  ): Promise<(TaskModel | undefined)[]> {
    const rows = batch.map((b) => casRow(b.task, b.change, b.now));
    let results: (TaskModel | undefined)[] = new Array(batch.length);
    if (together && batch.length > 1 && setBytes(rows) <= ONE_STATEMENT_MAX_BYTES) {
      results = (await this.compareAndSetMany(m, batch, rows)) ?? [];
      if (results.length === 0) throw new GroupRaceLost();
    } else {
      const order = batch
        .map((_, i) => i)
        .sort((a, b) =>
          batch[a].task.taskId < batch[b].task.taskId
            ? -1
            : batch[a].task.taskId > batch[b].task.taskId
              ? 1
              : a - b,
        );
      for (const i of order) results[i] = await this.compareAndSet(m, batch[i].task, rows[i]);
    }
    const won: WonChange[] = [];
    batch.forEach((b, i) => {
      const next = results[i];
      if (next) won.push({ ...b, next });
    });
    await this.log.record(m, won);
    return results;
  }

  /** The row update of one change, if the task is still at its version. */
  private async compareAndSet(
    m: EntityManager,
    task: TaskModel,
    { set, next }: CasRow,
  ): Promise<TaskModel | undefined> {
    // Plain SQL on the hot path: the query builder cost more CPU than the database did.
    const res = await this.sql.exec(
      m,
      `UPDATE baton_task SET version = version + 1, ${set.map(([c]) => `${c} = ?`).join(', ')} WHERE task_id = ? AND version = ?`,
      [...set.map(([, v]) => v), task.taskId, task.version],
    );
    return res.affected === 1 ? next : undefined;
  }

  /**
   * The row updates of several changes (of distinct tasks) as one statement: each column is a
   * CASE on task_id, each row still conditional on its own version. All or nothing: when fewer
   * rows than changes matched, some change lost its race, and which one cannot be told from the
   * count, so undefined is returned and the caller rolls the group back and goes row by row.
   */
  private async compareAndSetMany(
    m: EntityManager,
    items: readonly Item[],
    rows: readonly CasRow[],
  ): Promise<TaskModel[] | undefined> {
    const columns = new Map<string, number>();
    for (const r of rows) for (const [c] of r.set) columns.set(c, (columns.get(c) ?? 0) + 1);
    const sets: string[] = ['version = version + 1'];
    const params: unknown[] = [];
    for (const [column, count] of columns) {
      let cases = '';
      rows.forEach((r, i) => {
        const hit = r.set.find(([c]) => c === column);
        if (!hit) return;
        cases += ' WHEN ? THEN ?';
        params.push(items[i].task.taskId, hit[1]);
      });
      // A column only some changes set keeps its value in the other rows.
      sets.push(
        `${column} = CASE task_id${cases}${count === rows.length ? '' : ` ELSE ${column}`} END`,
      );
    }
    const ids = items.map((i) => i.task.taskId);
    params.push(...ids);
    for (const i of items) params.push(i.task.taskId, i.task.version);
    const res = await this.sql.exec(
      m,
      `UPDATE baton_task SET ${sets.join(', ')} WHERE task_id IN (${ids.map(() => '?').join(', ')}) AND version = CASE task_id${' WHEN ? THEN ?'.repeat(items.length)} END`,
      params,
    );
    return res.affected === items.length ? rows.map((r) => r.next) : undefined;
  }
}
