import { Inject, Injectable } from '@nestjs/common';
import { ContractErrorCode, ContractException, LogBatchDto } from '@baton/task-contract';
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
    // A batch's lines mostly share their millisecond: each distinct time is read once.
    let lastText = '';
    let last = Number.NaN;
    const lines = batch.lines.map((l, i) => {
      if (l.at !== lastText) {
        lastText = l.at;
        last = Date.parse(l.at);
      }
      const at = last;
      // ISO 8601 has forms the contract's date-time is not (20261129, week dates, a comma
      // before the fraction): refused, not kept as a time no one can read.
      if (!Number.isFinite(at))
        throw new ContractException(
          ContractErrorCode.VALIDATION_FAILED,
          `lines[${i}].at must be an RFC 3339 date-time (as toISOString() writes it), not ${JSON.stringify(l.at)}`,
          { at: l.at },
        );
      return { seq: l.seq, at, level: l.level, message: l.message, fields: l.fields ?? null };
    });
    return this.logs.appendFromWorker(taskId, batch.attempt, fence, lines, this.config.attemptLogs);
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
