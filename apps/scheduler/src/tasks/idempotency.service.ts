import { Injectable } from '@nestjs/common';
import { ContractErrorCode, ContractException } from '@baton/task-contract';
import { createHash } from 'node:crypto';
import { DataSource, QueryFailedError } from 'typeorm';
import { Clock, crashPoint } from '../common';
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

/** How long a repeat waits for the first request under its key to store its answer. */
const IN_FLIGHT_WAIT_MS = 2000;
const IN_FLIGHT_POLL_MS = 50;

/**
 * The `Idempotency-Key` header of creates: the first request runs; a repeat with a different body
 * gets 422, a repeat after the first finished its stored answer. A repeat while the first is in
 * flight waits for its answer up to 2 s, then runs the work itself: the first may have died with
 * its process (a scheduler killed mid-request), and its client is retrying on another instance.
 * `work` must be safe to run twice, even at once: the create carries the key into the task's
 * unique key, so both runs answer the same task.
 */
@Injectable()
export class IdempotencyService {
  constructor(
    private readonly db: DataSource,
    private readonly clock: Clock,
  ) {}

  async run(
    tenant: string,
    key: string,
    body: unknown,
    work: () => Promise<IdempotentAnswer>,
  ): Promise<IdempotentAnswer> {
    const hash = createHash('sha256').update(canonical(body)).digest('hex');
    const repo = this.db.getRepository(IdempotencyRecordEntity);
    try {
      await repo.insert({
        tenant,
        idempotency_key: key,
        request_hash: hash,
        state: 'in_flight',
        response_status: null,
        response_body: null,
        created_at: this.clock.now(),
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
      const stored = seen.state === 'done' ? seen : await this.answerOf(tenant, key, hash);
      // The stored answer, but a repeat creates nothing: 201 Created is answered as 200.
      if (stored)
        return {
          status: stored.response_status === 201 ? 200 : (stored.response_status ?? 200),
          body: JSON.parse(stored.response_body ?? 'null') as unknown,
        };
      // Still in flight: run the work too, leaving the record to the request that wrote it.
      const answer = await work();
      await this.store(tenant, key, answer);
      return answer;
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
    // a retry runs the work again after its wait, which finds the task by its key.
    await this.store(tenant, key, answer);
    return answer;
  }

  private async store(tenant: string, key: string, answer: IdempotentAnswer): Promise<void> {
    await this.db.getRepository(IdempotencyRecordEntity).update(
      { tenant, idempotency_key: key, state: 'in_flight' },
      {
        state: 'done',
        response_status: answer.status,
        response_body: JSON.stringify(answer.body),
      },
    );
  }

  /** Waits up to IN_FLIGHT_WAIT_MS for the request in flight under the key to store its answer. */
  private async answerOf(
    tenant: string,
    key: string,
    hash: string,
  ): Promise<IdempotencyRecordEntity | undefined> {
    const repo = this.db.getRepository(IdempotencyRecordEntity);
    const until = this.clock.now() + IN_FLIGHT_WAIT_MS;
    while (this.clock.now() < until) {
      await this.clock.sleep(IN_FLIGHT_POLL_MS);
      const seen = await repo.findOneBy({ tenant, idempotency_key: key });
      // Gone: the first request was refused; this one runs (and fails or succeeds) on its own.
      if (!seen || seen.request_hash !== hash) return undefined;
      if (seen.state === 'done') return seen;
    }
    return undefined;
  }
}
