import {
  CallHandler,
  ExecutionContext,
  Injectable,
  NestInterceptor,
  HttpException,
} from '@nestjs/common';
import type { IncomingHttpHeaders } from 'node:http';
import { Observable, tap } from 'rxjs';
import { ContractException } from '../errors/contract.exception';
import { HEADER } from '../util/headers';
import { OpenSpan, tracing } from '../util/tracing';

/** The contract call a request makes (`create`, `create_run`, `query`, `status`, `running`, ...). */
export function contractAction(method: string, action: unknown): string {
  const named = typeof action === 'string' && action !== '' ? action : undefined;
  if (method === 'POST') return named === 'running' ? 'create_run' : 'create';
  if (method === 'GET') return named ?? 'query';
  return named ?? 'notify';
}

/**
 * The server span of one contract call a worker answers, in the trace of the caller's
 * traceparent (one trace per task attempt: the scheduler names it); undefined when tracing is
 * off (`startTracing`) or the call carries no traceparent.
 */
export function startWorkerSpan(
  method: string,
  taskType: string | undefined,
  query: Record<string, unknown> | undefined,
  body: unknown,
  headers: IncomingHttpHeaders,
): OpenSpan | undefined {
  const t = tracing();
  if (!t.enabled) return undefined;
  const traceparent = headers[HEADER.TRACEPARENT];
  const action = contractAction(method, query?.action);
  const bodyTaskId = (body as { task_id?: unknown } | null | undefined)?.task_id;
  const taskId = typeof query?.task_id === 'string' ? query.task_id : bodyTaskId;
  return t.start(
    `task ${action}`,
    'server',
    typeof traceparent === 'string' ? traceparent : undefined,
    {
      'baton.action': action,
      'baton.task_type': taskType,
      'baton.task_id': typeof taskId === 'string' ? taskId : undefined,
      'http.request.method': method,
    },
  );
}

/** Ends a worker's server span with how the call ended. */
export function endWorkerSpan(span: OpenSpan, status: number, err?: unknown): void {
  const refused = err instanceof ContractException || err instanceof HttpException;
  span.end(
    {
      'http.response.status_code': status,
      'baton.outcome': err ? (refused ? 'refused' : 'error') : 'ok',
    },
    err === undefined ? undefined : err instanceof Error ? err.message : String(err),
  );
}

/**
 * Times each contract call the worker's controller answers as a server span (ContractFastPath
 * does the same for the calls it answers). Costs one check per call while tracing is off.
 */
@Injectable()
export class WorkerTracingInterceptor implements NestInterceptor {
  intercept(context: ExecutionContext, next: CallHandler): Observable<unknown> {
    if (!tracing().enabled) return next.handle();
    const req = context.switchToHttp().getRequest<{
      method: string;
      headers: IncomingHttpHeaders;
      params?: Record<string, string>;
      query?: Record<string, unknown>;
      body?: unknown;
    }>();
    const span = startWorkerSpan(
      req.method,
      req.params?.task_type,
      req.query,
      req.body,
      req.headers,
    );
    if (!span) return next.handle();
    return next.handle().pipe(
      tap({
        next: () => endWorkerSpan(span, 200),
        error: (err: unknown) => endWorkerSpan(span, statusOf(err), err),
      }),
    );
  }
}

function statusOf(err: unknown): number {
  return err instanceof HttpException ? err.getStatus() : 500;
}
