import { STATUS_CODES, type IncomingHttpHeaders } from 'node:http';
import type { Duplex } from 'node:stream';
import { HEADER } from '../util/headers';
import { traceIdOf } from '../util/trace';
import { ArgumentsHost, Catch, ExceptionFilter, HttpException, Logger } from '@nestjs/common';
import { randomUUID } from 'node:crypto';
import {
  CONTRACT_ERROR_TABLE,
  ContractErrorCode,
  ContractException,
  httpStatusOf,
} from '../errors/contract.exception';
import { WorkerCallError } from '../errors/worker-call.errors';

interface ReplyLike {
  status(code: number): ReplyLike;
  header(name: string, value: string): ReplyLike;
  send(body: unknown): void;
}

/** The envelope for any error: `{code, message, data}` with the HTTP status the code implies. */
export function errorEnvelope(
  exception: unknown,
  logger: Logger,
  /** Fields the error's log line carries (the request's `request_id` and `trace_id`). */
  fields?: Record<string, string>,
): { status: number; body: { code: number; message: string; data: unknown } } {
  if (exception instanceof ContractException) {
    return {
      status: exception.httpStatus,
      body: { code: exception.code, message: exception.message, data: exception.data },
    };
  }
  if (exception instanceof WorkerCallError) {
    // A call this app made to a worker failed: pass its meaning on (the worker's 409 stays a 409,
    // an unreachable worker is 503, a timeout 504) instead of hiding it in a 500.
    const known = exception.code !== ContractErrorCode.OK && exception.code in CONTRACT_ERROR_TABLE;
    const code = known ? exception.code : ContractErrorCode.WORKER_UNAVAILABLE;
    return {
      status: httpStatusOf(code),
      body: { code, message: `worker: ${exception.message}`, data: null },
    };
  }
  if (exception instanceof HttpException) {
    const status = exception.getStatus();
    const response = exception.getResponse();
    const raw =
      typeof response === 'object' && response !== null && 'message' in response
        ? (response as { message: unknown }).message
        : exception.message;
    const message = ([] as unknown[]).concat(raw).join('; ');
    // Nest hands Fastify's body-parser failures over as a 400 with a string message; the
    // validation pipe's 400 carries a list of messages.
    const code =
      status === 400 && !Array.isArray(raw) ? ContractErrorCode.MALFORMED_BODY : status * 100;
    return { status, body: { code, message, data: Array.isArray(raw) ? { errors: raw } : null } };
  }
  // Anything else is our bug: log it with an id the caller can quote, leak nothing.
  const errorId = randomUUID();
  const line = `error ${errorId}: ${exception instanceof Error ? (exception.stack ?? exception.message) : String(exception)}`;
  logger.error(fields ? { ...fields, error_id: errorId, msg: line } : line);
  return {
    status: 500,
    body: {
      code: ContractErrorCode.INTERNAL,
      message: `internal error (error id ${errorId})`,
      data: { error_id: errorId },
    },
  };
}

/**
 * Maps every error to the contract envelope. Mount it globally in an app that serves the
 * contract (the template worker does), so routing and body-parser errors get the envelope too.
 */
@Catch()
export class ContractExceptionFilter implements ExceptionFilter {
  private readonly logger = new Logger('ContractExceptionFilter');

  catch(exception: unknown, host: ArgumentsHost): void {
    const http = host.switchToHttp();
    const reply = http.getResponse<ReplyLike>();
    const headers = http.getRequest<{ headers?: IncomingHttpHeaders } | undefined>()?.headers ?? {};
    const { status, body } = errorEnvelope(exception, this.logger, requestFields(headers));
    reply.status(status).header('content-type', 'application/json; charset=utf-8');
    // A refusal that says when to come back says it in the header clients and proxies read.
    const retry = (body.data as { retry_after_seconds?: unknown } | null)?.retry_after_seconds;
    if (typeof retry === 'number') reply.header('retry-after', String(Math.ceil(retry)));
    reply.send(body);
  }
}

/** A caller's request id, when it is a sensible one to log. */
const REQUEST_ID = /^[\w.:/@-]{1,128}$/;

/** What an error line says of its request: the caller's X-Request-Id and the trace it is in. */
function requestFields(headers: IncomingHttpHeaders): Record<string, string> | undefined {
  const out: Record<string, string> = {};
  const given = headers[HEADER.REQUEST_ID];
  if (typeof given === 'string' && REQUEST_ID.test(given)) out.request_id = given;
  const trace = traceIdOf(headers[HEADER.TRACEPARENT]);
  if (trace) out.trace_id = trace;
  return Object.keys(out).length > 0 ? out : undefined;
}

/**
 * Fastify's `frameworkErrors` option: the URL errors it answers before any route runs (a bad
 * percent-encoding or UTF-8 in the path, a path parameter past `maxParamLength`) in the envelope
 * like every other answer, instead of Fastify's own body.
 */
export function contractFrameworkErrors(
  error: Error & { statusCode?: number; code?: string },
  _req: unknown,
  reply: unknown,
): void {
  const [code, message] =
    error.code === 'FST_ERR_BAD_URL'
      ? [ContractErrorCode.BAD_URL, 'the URL is not valid: bad percent-encoding or UTF-8']
      : error.statusCode === 414
        ? [ContractErrorCode.URI_TOO_LONG, 'a path parameter is longer than the limit']
        : [ContractErrorCode.INTERNAL, `the request could not be routed: ${error.message}`];
  (reply as ReplyLike)
    .status(httpStatusOf(code))
    .header('content-type', 'application/json; charset=utf-8')
    .send({ code, message, data: null });
}

/**
 * Fastify's `clientErrorHandler`: what Node's HTTP parser refuses before Fastify sees a request
 * (headers past the size limit, a malformed request line or header, a request not received in
 * time) answered in the envelope like everything else, and the connection closed. Node gives no
 * request to answer, so the answer is written on the socket, when nothing was written there yet.
 */
export function contractClientErrors(err: Error & { code?: string }, socket: Duplex): void {
  if (err.code === 'ECONNRESET' || socket.destroyed) return;
  const [code, message] =
    err.code === 'HPE_HEADER_OVERFLOW'
      ? [ContractErrorCode.HEADERS_TOO_LARGE, 'the request headers are larger than the limit']
      : err.code === 'ERR_HTTP_REQUEST_TIMEOUT'
        ? [ContractErrorCode.REQUEST_TIMEOUT, 'the request was not received whole in time']
        : [
            ContractErrorCode.MALFORMED_REQUEST,
            `the HTTP request is malformed${err.code?.startsWith('HPE_') ? ` (${err.code})` : ''}`,
          ];
  const status = httpStatusOf(code);
  const body = JSON.stringify({ code, message, data: null });
  const written = (socket as Duplex & { bytesWritten?: number }).bytesWritten ?? 0;
  if (socket.writable && written === 0)
    socket.write(
      `HTTP/1.1 ${status} ${STATUS_CODES[status] ?? ''}\r\n` +
        'Content-Type: application/json; charset=utf-8\r\n' +
        `Content-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
    );
  socket.destroy(err);
}
