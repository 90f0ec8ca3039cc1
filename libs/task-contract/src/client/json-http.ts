import type { LookupFunction } from 'node:net';
import { randomUUID } from 'node:crypto';
import { Pool } from 'undici';
import { Clock, systemClock } from '@baton/time';
import { AuthConfig, authHeaders } from '../worker/auth/request-auth';
import { ContractErrorCode } from '../errors/contract.exception';
import {
  ERROR_CLASS_BY_CODE,
  WorkerCallError,
  WorkerProtocolError,
  WorkerTimeoutError,
  WorkerUnavailableError,
} from '../errors/worker-call.errors';
import { isEnvelope } from '../dto/envelope.dto';
import { HEADER, newTraceparent } from '../util/headers';
import { socketErrorCode } from './socket-error';

/** Per-call settings every contract call carries. */
export interface CallOptions {
  /** X-Baton-Fence: the fencing token of the lock the caller holds for the task. */
  fence: number;
  /** X-Request-Id; a fresh UUID when absent. */
  requestId?: string;
  /** W3C traceparent; a fresh one when absent. */
  traceparent?: string;
  /** Overrides the client's default timeout for this call. */
  timeoutMs?: number;
}

export interface JsonHttpOptions {
  auth: AuthConfig;
  /** Default per-call timeout (ms). Default 10 000. */
  timeoutMs?: number;
  /** Keep-alive connections per origin. Default 64. */
  connections?: number;
  /** Largest answer body read, bytes; a larger one is a WorkerProtocolError. Default 8 MiB. */
  maxResponseBytes?: number;
  /**
   * Resolves host names for connections (`net.connect`'s `lookup`): the scheduler's checks the
   * address each connection is made to (`guardedLookup`). Default: the system's.
   */
  lookup?: LookupFunction;
  /** The traceparent of a call that names none (the trace the caller is in); default: a new one. */
  traceparent?: () => string | undefined;
  /** The time source: signature timestamps, call deadlines, idle pools. Default: systemClock. */
  clock?: Clock;
}

/** A pool unused this long is closed, so workers that come and go leave no sockets behind. */
const POOL_IDLE_MS = 60_000;

/** Parsed base URLs kept; workers come and go, so the cache is dropped when it grows past this. */
const MAX_BASES = 1024;

/** As URLSearchParams writes a value (form encoding: a space is `+`). */
function encodeQuery(value: string): string {
  return /^[A-Za-z0-9_.*-]*$/.test(value)
    ? value
    : new URLSearchParams({ v: value }).toString().slice(2);
}

const RETRYABLE_SOCKET_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'EPIPE',
  'EHOSTUNREACH',
  'ENOTFOUND',
  'UND_ERR_SOCKET',
  'UND_ERR_CLOSED',
  'UND_ERR_CONNECT_TIMEOUT',
]);
const TIMEOUT_CODES = new Set(['UND_ERR_HEADERS_TIMEOUT', 'UND_ERR_BODY_TIMEOUT']);

/**
 * Signed JSON over undici keep-alive pools, one pool per origin. Answers must be contract
 * envelopes; anything else is a WorkerProtocolError. Errors come out as WorkerCallError classes.
 */
export class JsonHttp {
  private readonly pools = new Map<string, { pool: Pool; lastUsed: number }>();
  private readonly bases = new Map<string, { origin: string; pathname: string }>();
  private readonly clock: Clock;
  private lastSweep: number;
  private readonly timeoutMs: number;
  private readonly connections: number;

  constructor(private readonly options: JsonHttpOptions) {
    this.clock = options.clock ?? systemClock;
    this.lastSweep = this.clock.now();
    this.timeoutMs = options.timeoutMs ?? 10_000;
    this.connections = options.connections ?? 64;
  }

  async call<T>(
    method: 'GET' | 'POST' | 'PUT',
    baseUrl: string,
    path: string,
    query: Record<string, string | undefined>,
    body: unknown,
    opts: CallOptions,
  ): Promise<T> {
    const base = this.base(baseUrl);
    let search = '';
    for (const k in query) {
      const v = query[k];
      if (v !== undefined) search += `${search ? '&' : '?'}${encodeQuery(k)}=${encodeQuery(v)}`;
    }
    const pathWithQuery = `${base.pathname}${path}${search}`;
    const payload = body === undefined ? '' : JSON.stringify(body);
    const headers: Record<string, string> = {
      [HEADER.FENCE]: String(opts.fence),
      [HEADER.REQUEST_ID]: opts.requestId ?? randomUUID(),
      [HEADER.TRACEPARENT]: opts.traceparent ?? this.options.traceparent?.() ?? newTraceparent(),
      accept: 'application/json',
      ...authHeaders(
        this.options.auth,
        { method, pathWithQuery, fence: String(opts.fence), body: payload },
        this.clock.now(),
      ),
    };
    if (body !== undefined) headers['content-type'] = 'application/json';
    const timeout = opts.timeoutMs ?? this.timeoutMs;
    const where = `${method} ${base.origin}${pathWithQuery}`;

    let statusCode: number;
    let text: string;
    // A deadline for the whole call, cancelled when it ends: AbortSignal.timeout() would leave one
    // pending timer per call until it fired (thousands at a time on a busy scheduler). It is the
    // only bound: undici's own header and body timers would fire after a stall of this process
    // ahead of an answer already waiting in the socket, which the deadline reads first.
    const deadline = this.clock.deadline(timeout);
    try {
      const res = await this.pool(base.origin).request({
        method,
        path: pathWithQuery,
        headers,
        body: body === undefined ? undefined : payload,
        headersTimeout: 0,
        bodyTimeout: 0,
        signal: deadline.signal,
      });
      statusCode = res.statusCode;
      text = await readCapped(res.body, this.options.maxResponseBytes ?? 8 * 1_048_576, where);
    } catch (err) {
      if (err instanceof WorkerProtocolError) throw err;
      throw toTransportError(err, where, timeout);
    } finally {
      deadline.cancel();
    }

    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch {
      throw new WorkerProtocolError(
        `${where} answered ${statusCode} with a body that is not JSON`,
        ContractErrorCode.INTERNAL,
        statusCode,
      );
    }
    if (!isEnvelope(parsed)) {
      throw new WorkerProtocolError(
        `${where} answered ${statusCode} without the {code, message, data} envelope`,
        ContractErrorCode.INTERNAL,
        statusCode,
      );
    }
    if (parsed.code === 0 && statusCode >= 200 && statusCode < 300) return parsed.data as T;
    if (parsed.code === 0) {
      throw new WorkerProtocolError(
        `${where} answered HTTP ${statusCode} with code 0`,
        ContractErrorCode.INTERNAL,
        statusCode,
      );
    }
    const ErrorClass =
      ERROR_CLASS_BY_CODE[parsed.code as ContractErrorCode] ??
      (statusCode >= 500 ? WorkerUnavailableError : WorkerProtocolError);
    throw new ErrorClass(
      `${where}: ${parsed.message}`,
      parsed.code as ContractErrorCode,
      statusCode,
      parsed.data,
    );
  }

  async close(): Promise<void> {
    const pools = [...this.pools.values()];
    this.pools.clear();
    await Promise.all(pools.map((p) => p.pool.close()));
  }

  /** The origin and path prefix of a base URL, parsed once per URL. */
  private base(baseUrl: string): { origin: string; pathname: string } {
    let base = this.bases.get(baseUrl);
    if (!base) {
      const url = new URL(baseUrl);
      base = { origin: url.origin, pathname: url.pathname.replace(/\/+$/, '') };
      if (this.bases.size >= MAX_BASES) this.bases.clear();
      this.bases.set(baseUrl, base);
    }
    return base;
  }

  private pool(origin: string): Pool {
    const now = this.clock.now();
    if (now - this.lastSweep > POOL_IDLE_MS / 2) this.sweep(now);
    let entry = this.pools.get(origin);
    if (!entry) {
      const pool = new Pool(origin, {
        connections: this.connections,
        pipelining: 1,
        keepAliveTimeout: 30_000,
        ...(this.options.lookup ? { connect: { lookup: this.options.lookup } } : {}),
      });
      entry = { pool, lastUsed: now };
      this.pools.set(origin, entry);
    }
    entry.lastUsed = now;
    return entry.pool;
  }

  private sweep(now: number): void {
    this.lastSweep = now;
    for (const [origin, entry] of this.pools) {
      if (now - entry.lastUsed > POOL_IDLE_MS) {
        this.pools.delete(origin);
        // Requests still in flight on it finish before close() resolves.
        void entry.pool.close().catch(() => undefined);
      }
    }
  }
}

async function readCapped(
  body: AsyncIterable<Buffer>,
  limit: number,
  where: string,
): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of body) {
    size += chunk.length;
    if (size > limit) {
      throw new WorkerProtocolError(
        `${where} answered more than ${limit} bytes`,
        ContractErrorCode.INTERNAL,
        0,
      );
    }
    chunks.push(chunk);
  }
  return Buffer.concat(chunks).toString('utf8');
}

function toTransportError(err: unknown, where: string, timeout: number): WorkerCallError {
  const e = err as { name?: string; message?: string };
  const code = socketErrorCode(err) ?? '';
  if (e.name === 'TimeoutError' || e.name === 'AbortError' || TIMEOUT_CODES.has(code)) {
    return new WorkerTimeoutError(
      `${where}: no answer within ${timeout} ms`,
      ContractErrorCode.WORKER_TIMEOUT,
      0,
      null,
      { cause: err },
    );
  }
  const reason = RETRYABLE_SOCKET_CODES.has(code) ? code : (e.message ?? String(err));
  return new WorkerUnavailableError(
    `${where}: ${reason}`,
    ContractErrorCode.WORKER_UNAVAILABLE,
    0,
    null,
    { cause: err },
  );
}
