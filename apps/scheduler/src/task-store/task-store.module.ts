import { Module, OnModuleInit } from '@nestjs/common';
import { AttemptLogsRepository } from './attempt-logs.repository';
import { AttemptDropsRepository } from './attempt-drops.repository';
import { GroupCommitWriter } from './group-commit.writer';
import { SqlRunner } from './sql-runner';
import { TaskChangeFeed } from './task-change-feed';
import { TaskChangeRelay } from './task-change-relay';
import { TaskEventTail } from './task-event-tail';
import { TaskCountsRepository } from './task-counts.repository';
import { TaskHistoryRepository } from './task-history.repository';
import { TaskLogRepository } from './task-log.repository';
import { TaskPurgeRepository } from './task-purge.repository';
import { TasksRepository } from './tasks.repository';

/**
 * Where tasks live: their rows and compare-and-set (TasksRepository), the lifecycle log and
 * attempts (TaskLogRepository), the group-commit writer behind every transition, and the durable
 * status-change seam (TaskChangeFeed: consumers subscribe; TaskChangeRelay hands the outbox over),
 * the counts of tasks by type and status kept with each change (TaskCountsRepository), and the
 * tasks finished per minute by type and outcome (TaskHistoryRepository).
 * Other modules read and change tasks only through what this module exports.
 */
@Module({
  providers: [
    AttemptDropsRepository,
    AttemptLogsRepository,
    SqlRunner,
    TaskChangeFeed,
    TaskChangeRelay,
    TaskLogRepository,
    GroupCommitWriter,
    TasksRepository,
    TaskPurgeRepository,
    TaskCountsRepository,
    TaskEventTail,
    TaskHistoryRepository,
  ],
  exports: [
    AttemptLogsRepository,
    TaskEventTail,
    TaskCountsRepository,
    TaskHistoryRepository,
    TasksRepository,
    TaskLogRepository,
    TaskChangeFeed,
    AttemptDropsRepository,
    TaskPurgeRepository,
  ],
})
export class TaskStoreModule implements OnModuleInit {
  constructor(
    private readonly feed: TaskChangeFeed,
    private readonly counts: TaskCountsRepository,
    private readonly history: TaskHistoryRepository,
  ) {}

  /** Tasks by type and status, and finished per minute, are kept with every change. */
  onModuleInit(): void {
    this.feed.attach(this.counts);
    this.feed.attach(this.history);
  }
}
