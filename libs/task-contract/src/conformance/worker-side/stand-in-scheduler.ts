import { createServer, IncomingMessage, Server, ServerResponse } from 'node:http';
import { AddressInfo } from 'node:net';
import { Clock, Timer, systemClock } from '@baton/time';
import { ContractErrorCode } from '../../errors/contract.exception';
import { HEADER } from '../../util/headers';
import { AuthConfig, RequestVerifier } from '../../worker/auth/request-auth';
import { Expectation } from '../expectations';

/** One request the worker made, as the stand-in saw it. */
export interface Received {
  readonly seq: number;
  readonly method: string;
  /** The path without the query. */
  readonly path: string;
  readonly headers: Record<string, string | string[] | undefined>;
  /** The parsed JSON body (undefined when there was none or it was not JSON). */
  readonly body: unknown;
  /** When it arrived, on the kit's clock. */
  readonly at: number;
  /** Why its authentication was refused (401), if it was. */
  readonly authError?: string;
  /** What the stand-in answered: an HTTP status, or `reset` (the connection was dropped). */
  readonly answered: number | 'reset';
}

/** What the stand-in does with a request a rule matches, instead of its usual answer. */
export type Fault =
  { kind: 'status'; status: number; code: number; message: string } | { kind: 'reset' };

export const UNAVAILABLE: Fault = {
  kind: 'status',
  status: 503,
  code: 50300,
  message: 'the stand-in scheduler plays a scheduler that cannot answer now',
};
export const RESET: Fault = { kind: 'reset' };
export const STALE: Fault = {
  kind: 'status',
  status: 409,
  code: ContractErrorCode.STALE_FENCE,
  message: 'the attempt is not the current one any more (the stand-in scheduler says so)',
};

/** The timing the stand-in states in its registration answer (the contract's `timing`). */
export interface StandInTiming {
  heartbeatIntervalMs: number;
  typeHeartbeatIntervalMs: number;
}

interface Rule {
  matches: (r: { method: string; path: string; body: unknown }) => boolean;
  faults: Fault[];
}

type Waiter = () => void;

/**
 * A scheduler's worker-facing side, played for the worker-side checks: it takes the worker's
 * registration, heartbeats and callbacks, verifies their authentication as the scheduler does,
 * records every request, and answers as a scheduler would, or with the faults a check asks for
 * (a 5xx, a dropped connection, a 409).
 */
export class StandInScheduler {
  readonly received: Received[] = [];
  private readonly rules: Rule[] = [];
  private readonly waiters = new Set<Waiter>();
  private readonly verifier: RequestVerifier;
  private readonly clock: Clock;
  private server: Server | undefined;
  private workerIds = new Set<string>();
  /** Requests being read or answered now. */
  private open = 0;
  url = '';

  constructor(
    auth: AuthConfig,
    private readonly timing: StandInTiming,
    clock: Clock = systemClock,
  ) {
    this.clock = clock;
    this.verifier = new RequestVerifier(auth, clock);
  }

  async start(): Promise<void> {
    const server = createServer((req, res) => {
      this.open++;
      // A client gone mid-body (a worker killed) ends its request here, not the kit.
      this.serve(req, res)
        .catch(() => req.socket.destroy())
        .finally(() => {
          this.open--;
          for (const w of [...this.waiters]) w();
        });
    });
    this.server = server;
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    this.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  }

  async close(): Promise<void> {
    const server = this.server;
    if (!server) return;
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }

  /** The next requests `matches` picks get `faults`, one each, in order; then the usual answer. */
  failNext(matches: Rule['matches'], ...faults: Fault[]): void {
    this.rules.push({ matches, faults: [...faults] });
  }

  /** Whether no request is being read or answered now (all that arrived is recorded). */
  get idle(): boolean {
    return this.open === 0;
  }

  /** Requests so far that `pick` keeps. */
  where(pick: (r: Received) => boolean): Received[] {
    return this.received.filter(pick);
  }

  /**
   * Resolves with what `found` returns once it returns something, checked at each request and
   * once at the start; fails the check after `timeoutMs` on the kit's clock, naming `what`.
   */
  waitFor<T>(what: string, timeoutMs: number, found: () => T | undefined): Promise<T> {
    const first = found();
    if (first !== undefined) return Promise.resolve(first);
    return new Promise<T>((resolve, reject) => {
      const timer: Timer = this.clock.setTimeout(() => {
        this.waiters.delete(waiter);
        reject(new Expectation(`${what}: nothing within ${timeoutMs} ms`));
      }, timeoutMs);
      const waiter: Waiter = () => {
        const value = found();
        if (value === undefined) return;
        this.waiters.delete(waiter);
        this.clock.clearTimeout(timer);
        resolve(value);
      };
      this.waiters.add(waiter);
    });
  }

  private async serve(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const raw = Buffer.concat(chunks);
    const method = req.method ?? 'GET';
    const target = req.url ?? '/';
    const path = target.split('?')[0];
    let body: unknown;
    try {
      body = raw.length > 0 ? JSON.parse(raw.toString('utf8')) : undefined;
    } catch {
      body = undefined;
    }
    let authError: string | undefined;
    try {
      this.verifier.verify({ method, pathWithQuery: target, headers: req.headers, rawBody: raw });
    } catch (err) {
      authError = err instanceof Error ? err.message : String(err);
    }
    const fault = authError ? undefined : this.takeFault(method, path, body);
    const answer = authError
      ? envelope(401, ContractErrorCode.UNAUTHENTICATED, authError)
      : fault
        ? fault.kind === 'reset'
          ? undefined
          : envelope(fault.status, fault.code, fault.message)
        : this.usualAnswer(method, path, body, req.headers);
    this.received.push({
      seq: this.received.length,
      method,
      path,
      headers: req.headers,
      body,
      at: this.clock.now(),
      authError,
      answered: answer ? answer.status : 'reset',
    });
    if (answer) {
      res.writeHead(answer.status, { 'content-type': 'application/json' });
      res.end(JSON.stringify(answer.json));
    } else {
      req.socket.destroy();
    }
    for (const w of [...this.waiters]) w();
  }

  private takeFault(method: string, path: string, body: unknown): Fault | undefined {
    const rule = this.rules.find((r) => r.faults.length > 0 && r.matches({ method, path, body }));
    return rule?.faults.shift();
  }

  private usualAnswer(
    method: string,
    path: string,
    body: unknown,
    headers: Received['headers'],
  ): Answer {
    const b = (body ?? {}) as Record<string, unknown>;
    if (method === 'POST' && path === '/v1/workers') {
      const workerId = typeof b.worker_id === 'string' ? b.worker_id : '';
      this.workerIds.add(workerId);
      const types = Array.isArray(b.task_types) ? (b.task_types as { task_type?: unknown }[]) : [];
      const t = this.timing;
      return envelope(200, 0, 'ok', {
        ...b,
        health: 'healthy',
        timing: {
          heartbeat_interval_ms: t.heartbeatIntervalMs,
          stale_after_ms: t.heartbeatIntervalMs * 3,
          poll_interval_ms: 2000,
          task_types: types.map((x) => ({
            task_type: String(x.task_type),
            heartbeat_interval_ms: t.typeHeartbeatIntervalMs,
            heartbeat_timeout_ms: t.typeHeartbeatIntervalMs * 3,
          })),
        },
      });
    }
    const beat = /^\/v1\/workers\/([^/]+)\/heartbeat$/.exec(path);
    if (method === 'PUT' && beat) {
      const id = decodeURIComponent(beat[1]);
      if (!this.workerIds.has(id))
        return envelope(404, ContractErrorCode.NOT_FOUND, `worker ${id} is not registered`);
      return envelope(200, 0, 'ok', { worker_id: id, health: 'healthy' });
    }
    if (method === 'PUT' && path === '/v1/attempt-logs') {
      const batches = Array.isArray(b.batches) ? (b.batches as Record<string, unknown>[]) : [];
      return envelope(200, 0, 'ok', {
        results: batches.map((x) => ({
          task_id: x.task_id,
          attempt: x.attempt,
          accepted: Array.isArray(x.lines) ? x.lines.length : 0,
          duplicates: 0,
        })),
      });
    }
    const callback = /^\/v1\/tasks\/([^/]+)\/(notify|heartbeat|progress|logs)$/.exec(path);
    if (method === 'PUT' && callback) {
      const taskId = decodeURIComponent(callback[1]);
      if (!/^\d+$/.test(String(headers[HEADER.FENCE] ?? '')))
        return envelope(
          400,
          ContractErrorCode.MISSING_FENCE,
          'X-Baton-Fence must be a non-negative integer',
        );
      if (callback[2] === 'logs') {
        const lines = Array.isArray(b.lines) ? b.lines.length : 0;
        return envelope(200, 0, 'ok', { task_id: taskId, accepted: lines, duplicates: 0 });
      }
      return envelope(200, 0, 'ok', { task_id: taskId, accepted: true });
    }
    return envelope(404, ContractErrorCode.NOT_FOUND, `the stand-in has no ${method} ${path}`);
  }
}

interface Answer {
  status: number;
  json: { code: number; message: string; data: unknown };
}

function envelope(status: number, code: number, message: string, data: unknown = null): Answer {
  return { status, json: { code, message, data } };
}
