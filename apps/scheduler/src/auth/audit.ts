import {
  CallHandler,
  ExecutionContext,
  Injectable,
  Logger,
  NestInterceptor,
  SetMetadata,
} from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import { DataSource, LessThan } from 'typeorm';
import { Observable, mergeMap } from 'rxjs';
import { Clock, IdGenerator } from '../common';
import { Principal, actorOf } from './access';
import { AuditEntryEntity } from './audit-entry.entity';

const AUDITED = 'baton:audited';

interface AuditRule {
  action: string;
  /**
   * The route parameter naming the target, or the answer's field (for a create); several joined
   * by "/" (`run_id/node`) name a target inside another.
   */
  target: string;
}

/** Marks a route that changes configuration: each success is written to the audit log. */
export const Audited = (action: string, target: string): MethodDecorator =>
  SetMetadata(AUDITED, { action, target } satisfies AuditRule);

export interface AuditQuery {
  limit: number;
  before?: string;
  actor?: string;
  action?: string;
}

/** The audit log: configuration changes made through the API (`GET /v1/audit`). */
@Injectable()
export class AuditLog {
  constructor(
    private readonly db: DataSource,
    private readonly ids: IdGenerator,
    private readonly clock: Clock,
  ) {}

  async record(
    actor: string,
    action: string,
    target: string | null,
    detail: unknown,
  ): Promise<void> {
    const entry: AuditEntryEntity = {
      audit_id: this.ids.taskId(),
      at: this.clock.now(),
      actor,
      action,
      target,
      detail: detail ?? null,
    };
    await this.db.getRepository(AuditEntryEntity).save(entry);
  }

  /** Newest first; `before` is the id of the last entry of the page before. */
  list(q: AuditQuery): Promise<AuditEntryEntity[]> {
    return this.db.getRepository(AuditEntryEntity).find({
      where: {
        ...(q.before ? { audit_id: LessThan(q.before) } : {}),
        ...(q.actor ? { actor: q.actor } : {}),
        ...(q.action ? { action: q.action } : {}),
      },
      order: { audit_id: 'DESC' },
      take: q.limit,
    });
  }
}

type AuditedRequest = {
  principal?: Principal;
  params?: Record<string, string>;
  body?: unknown;
};

/**
 * Writes an audit entry after each success of an `@Audited` route, before the answer goes out:
 * the caller (`key:<name>`), the action, its target and the body sent. A failed call writes none.
 */
@Injectable()
export class AuditInterceptor implements NestInterceptor {
  private readonly logger = new Logger('Audit');

  constructor(
    private readonly reflector: Reflector,
    private readonly audit: AuditLog,
  ) {}

  intercept(context: ExecutionContext, next: CallHandler): Observable<unknown> {
    const rule = this.reflector.get<AuditRule | undefined>(AUDITED, context.getHandler());
    if (!rule) return next.handle();
    const req = context.switchToHttp().getRequest<AuditedRequest>();
    return next.handle().pipe(
      mergeMap(async (answer: unknown) => {
        const data = (answer as { data?: Record<string, unknown> } | null)?.data;
        // A target of several route parameters (`run_id/node`) names them joined by "/".
        const parts = rule.target.split('/').map((name) => req.params?.[name] ?? data?.[name]);
        const target = parts.some((p) => p === undefined) ? undefined : parts.join('/');
        await this.audit
          .record(
            actorOf(req.principal),
            rule.action,
            target === undefined ? null : String(target),
            req.body ?? null,
          )
          .catch((err: unknown) => {
            // The change is made: say so rather than answer as if it had failed.
            this.logger.error(`could not write the audit entry of ${rule.action}: ${String(err)}`);
          });
        return answer;
      }),
    );
  }
}
