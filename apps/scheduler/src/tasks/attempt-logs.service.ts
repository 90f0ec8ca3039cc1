import { Inject, Injectable } from '@nestjs/common';
import { LogBatchDto } from '@baton/task-contract';
import { SCHEDULER_CONFIG, SchedulerConfig } from '../config';
import { AttemptLogPage, AttemptLogsRepository, LogLevel } from '../task-store';

/**
 * What workers log while they run an attempt: taken from the worker (signed and fenced by the
 * attempt's fence, also once the attempt ended), kept within the caps, read by people.
 */
@Injectable()
export class AttemptLogsService {
  constructor(
    private readonly logs: AttemptLogsRepository,
    @Inject(SCHEDULER_CONFIG) private readonly config: SchedulerConfig,
  ) {}

  /**
   * A batch of lines from the worker of an attempt: `unknown` when there is no such task,
   * `stale` when the attempt is not one the task had or the fence is not one it was driven with.
   */
  fromWorker(
    taskId: string,
    fence: number,
    batch: LogBatchDto,
  ): Promise<'unknown' | 'stale' | { accepted: number; duplicates: number }> {
    return this.logs.appendFromWorker(
      taskId,
      batch.attempt,
      fence,
      batch.lines.map((l) => ({
        seq: l.seq,
        at: Date.parse(l.at),
        level: l.level,
        message: l.message,
        fields: l.fields ?? null,
      })),
      this.config.attemptLogs,
    );
  }

  page(
    taskId: string,
    attempt: number,
    q: { after?: number; limit?: number; level?: LogLevel; q?: string },
  ): Promise<AttemptLogPage> {
    return this.logs.page(taskId, attempt, {
      after: q.after ?? -1,
      limit: q.limit ?? 200,
      minLevel: q.level,
      text: q.q,
    });
  }
}
