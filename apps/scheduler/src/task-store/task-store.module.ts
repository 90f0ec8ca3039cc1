import { Module, OnModuleInit } from '@nestjs/common';
import { AttemptDropsRepository } from './attempt-drops.repository';
import { GroupCommitWriter } from './group-commit.writer';
import { SqlRunner } from './sql-runner';
import { TaskChangeFeed } from './task-change-feed';
import { TaskChangeRelay } from './task-change-relay';
import { TaskEventTail } from './task-event-tail';
import { TaskCountsRepository } from './task-counts.repository';
import { TaskLogRepository } from './task-log.repository';
import { TaskPurgeRepository } from './task-purge.repository';
import { TasksRepository } from './tasks.repository';

/**
 * Where tasks live: their rows and compare-and-set (TasksRepository), the lifecycle log and
 * attempts (TaskLogRepository), the group-commit writer behind every transition, and the durable
 * status-change seam (TaskChangeFeed: consumers subscribe; TaskChangeRelay hands the outbox over),
 * and the counts of tasks by type and status kept with each change (TaskCountsRepository).
 * Other modules read and change tasks only through what this module exports.
 */
@Module({
  providers: [
    AttemptDropsRepository,
    SqlRunner,
    TaskChangeFeed,
    TaskChangeRelay,
    TaskLogRepository,
    GroupCommitWriter,
    TasksRepository,
    TaskPurgeRepository,
    TaskCountsRepository,
    TaskEventTail,
  ],
  exports: [
    TaskEventTail,
    TaskCountsRepository,
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
  ) {}

  /** Tasks by type and status are kept with every change. */
  onModuleInit(): void {
    this.feed.attach(this.counts);
  }
}
