import { systemClock } from '@baton/time';
import { DataSource } from 'typeorm';
import { TransactionRunner } from '../../database';
import { Metrics } from '../../metrics';
import { AttemptLogsRepository } from '../attempt-logs.repository';
import { GroupCommitWriter } from '../group-commit.writer';
import { SqlRunner } from '../sql-runner';
import { TaskChangeFeed } from '../task-change-feed';
import { TaskCountsRepository } from '../task-counts.repository';
import { TaskHistoryRepository } from '../task-history.repository';
import { TaskLogRepository } from '../task-log.repository';
import { TaskPurgeRepository } from '../task-purge.repository';
import { TasksRepository } from '../tasks.repository';

/** The task store's repositories over a data source, wired as the module wires them: for specs. */
export function taskStoreStack(ds: DataSource, metrics = new Metrics()) {
  const tx = new TransactionRunner(ds, systemClock);
  const sql = new SqlRunner(ds);
  const feed = new TaskChangeFeed(sql, tx);
  const counts = new TaskCountsRepository(ds, sql);
  feed.attach(counts);
  const history = new TaskHistoryRepository(ds, sql);
  feed.attach(history);
  const log = new TaskLogRepository(ds, sql, feed);
  const writer = new GroupCommitWriter(ds, tx, sql, log, metrics);
  return {
    tasks: new TasksRepository(ds, tx, sql, writer, log),
    log,
    attemptLogs: new AttemptLogsRepository(ds, sql, tx),
    purge: new TaskPurgeRepository(tx, sql, counts, ds),
    counts,
    history,
    sql,
    /** Runs SQL as it is (for a spec's own set-up and checks). */
    exec: (query: string, params: unknown[] = []) => sql.exec(undefined, query, params),
  };
}
