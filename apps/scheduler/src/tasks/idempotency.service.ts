import { Inject, Injectable } from '@nestjs/common';
import { ContractErrorCode, ContractException } from '@baton/task-contract';
import { createHash } from 'node:crypto';
import { DataSource, QueryFailedError } from 'typeorm';
import { Clock, crashPoint } from '../common';
import { SCHEDULER_CONFIG, SchedulerConfig } from '../config';
import { IdempotencyRecordEntity } from './idempotency-record.entity';

/** Canonical JSON: keys sorted, so the same body hashes the same whatever the key order. */
function canonical(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonical).join(',')}]`;
  if (value && typeof value === 'object') {
    return `{${Object.keys(value as object)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${canonical((value as Record<string, unknown>)[k])}`)
      .join(',')}}`;
  }
  return JSON.stringify(value);
}

export type IdempotentAnswer = { status: number; body: unknown };

/**
 * The `Idempotency-Key` header of creates: the first request runs; a repeat while it is in flight
 * gets 409, a repeat with a different body 422, a repeat after it finished the stored answer. A
 * request in flight longer than `idempotencyAbandonedMs` is taken over (its process died); `work`
 * must then be safe to run again: the create carries the key into the task's unique key.
 */
@Injectable()
export class IdempotencyService {
  constructor(
    private readonly db: DataSource,
    private readonly clock: Clock,
    @Inject(SCHEDULER_CONFIG) private readonly config: SchedulerConfig,
  ) {}

  async run(
    tenant: string,
    key: string,
    body: unknown,
    work: () => Promise<IdempotentAnswer>,
  ): Promise<IdempotentAnswer> {
    const hash = createHash('sha256').update(canonical(body)).digest('hex');
    const now = this.clock.now();
    const repo = this.db.getRepository(IdempotencyRecordEntity);
    try {
      await repo.insert({
        tenant,
        idempotency_key: key,
        request_hash: hash,
        state: 'in_flight',
        response_status: null,
        response_body: null,
        created_at: now,
      });
    } catch (err) {
      if (!(err instanceof QueryFailedError)) throw err;
      const seen = await repo.findOneBy({ tenant, idempotency_key: key });
      if (!seen) throw err;
      if (seen.request_hash !== hash) {
        throw new ContractException(
          ContractErrorCode.IDEMPOTENCY_MISMATCH,
          'this Idempotency-Key was used with a different body',
        );
      }
      if (seen.state === 'done')
        return {
          status: seen.response_status ?? 200,
          body: JSON.parse(seen.response_body ?? 'null') as unknown,
        };
      const abandoned = now - seen.created_at > this.config.idempotencyAbandonedMs;
      const taken =
        abandoned &&
        (
          await repo.update(
            { tenant, idempotency_key: key, created_at: seen.created_at, state: 'in_flight' },
            { created_at: now },
          )
        ).affected === 1;
      if (!taken)
        throw new ContractException(
          ContractErrorCode.IDEMPOTENCY_IN_FLIGHT,
          'a request with this Idempotency-Key is in flight; retry later',
        );
    }
    let answer: IdempotentAnswer;
    try {
      answer = await work();
    } catch (err) {
      // A refused request stores nothing: the client may fix it and send it again under the key.
      await repo.delete({ tenant, idempotency_key: key });
      throw err;
    }
    crashPoint('after-idempotent-create');
    // The work is done: should this write fail, the record stays in flight (never deleted), and
    // a retry after the abandon window runs the work again, which finds the task by its key.
    await repo.update(
      { tenant, idempotency_key: key },
      {
        state: 'done',
        response_status: answer.status,
        response_body: JSON.stringify(answer.body),
      },
    );
    return answer;
  }
}
