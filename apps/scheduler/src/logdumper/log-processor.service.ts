import { Injectable, Logger } from '@nestjs/common';
import { ContractException, validateDto } from '@baton/task-contract';
import { CreateTaskDto, TasksService } from '../tasks';
import { LogRecord, MalformedRecord } from './log-record';
import { ActiveRule, LogRulesService } from './log-rules.service';
import { LogDumperCounters } from './logdumper.counters';
import { ruleTaskBody } from './rule-task';

/** What became of one record. */
export interface RecordOutcome {
  dropped: boolean;
  matched: number;
  created: number;
  duplicate: number;
  rejected: number;
  /** Why the record was dropped, or why a matched task was refused. */
  reasons: string[];
}

/** A record, or what is left of one that could not be read. */
export type Incoming = LogRecord | MalformedRecord;

/**
 * Turns records into tasks, the same way for every source: each enabled rule of the source is
 * tried; a match fills the rule's template and creates the task under the record's idempotency
 * key, so a replayed record answers the task it made before. Returns only once every task of the
 * given records exists; a failure that is not the record's fault (database down) is thrown, and
 * the source must not move past the record.
 */
@Injectable()
export class LogProcessorService {
  private readonly logger = new Logger('LogDumper');

  constructor(
    private readonly rules: LogRulesService,
    private readonly tasks: TasksService,
    private readonly counters: LogDumperCounters,
  ) {}

  /** Processes records of one source in order (through one tenant's rules only, if given). */
  async process(
    sourceId: string,
    records: readonly Incoming[],
    tenant?: string,
  ): Promise<RecordOutcome[]> {
    const active = records.length ? await this.rules.activeFor(sourceId, tenant) : [];
    const out: RecordOutcome[] = [];
    for (const r of records) out.push(await this.one(sourceId, r, active));
    return out;
  }

  private async one(
    sourceId: string,
    record: Incoming,
    active: readonly ActiveRule[],
  ): Promise<RecordOutcome> {
    const outcome: RecordOutcome = {
      dropped: false,
      matched: 0,
      created: 0,
      duplicate: 0,
      rejected: 0,
      reasons: [],
    };
    this.counters.add(sourceId, 'ingested');
    if (record instanceof MalformedRecord) {
      this.counters.add(sourceId, 'dropped');
      return { ...outcome, dropped: true, reasons: [record.reason] };
    }
    for (const { rule, matcher } of active) {
      const lookup = matcher(record.content);
      if (!lookup) continue;
      outcome.matched++;
      this.counters.add(sourceId, 'matched');
      const body = ruleTaskBody(rule, lookup, record);
      try {
        const { created } = await this.tasks.create(validateDto(CreateTaskDto, body));
        outcome[created ? 'created' : 'duplicate']++;
        this.counters.add(sourceId, created ? 'created' : 'duplicate');
      } catch (err) {
        // A 4xx is this record's fault (a capture that makes a bad field, an unregistered type):
        // the task can never be made, so it is counted and skipped. Anything else is retried.
        if (!(err instanceof ContractException) || err.httpStatus >= 500) throw err;
        outcome.rejected++;
        outcome.reasons.push(`rule ${rule.ruleId}: ${err.message}`);
        this.counters.add(sourceId, 'rejected');
        this.logger.warn(
          `${sourceId} ${record.position}: rule ${rule.name} (${rule.ruleId}) made no task: ${err.message}`,
        );
      }
    }
    if (outcome.matched === 0) this.counters.add(sourceId, 'unmatched');
    return outcome;
  }
}
