import { Clock } from '@baton/time';
import { HEADER } from '../../util/headers';
import { AuthConfig } from '../../worker/auth/request-auth';
import { ContractSection } from '../conformance-check';
import { ConformanceProbe } from '../conformance-probe';
import { Expectation } from '../expectations';
import { Received, StandInScheduler } from './stand-in-scheduler';
import { WorkerUnderTest } from './worker-under-test';

export interface WorkerSideOptions {
  /**
   * The command that starts the worker, run by `/bin/sh -c "exec COMMAND"` (so it must be one
   * command; set its other settings in the kit's environment, which it inherits).
   */
  command: string;
  /** The environment variable the worker reads the scheduler's URL from. Default BATON_SCHEDULER_URL. */
  urlEnv?: string;
  /** More environment for the worker, over the kit's own (which it inherits). */
  env?: NodeJS.ProcessEnv;
  /** An async task type the worker registers. */
  type: string;
  /** params of a run of the type that lasts about a second or two and ends SUCCESS. */
  params?: Record<string, unknown>;
  /** The credentials the worker signs with (and accepts): the same both ways. */
  auth: AuthConfig;
  /** How long the worker may take to register after it starts. Default 30 s. */
  startTimeoutMs?: number;
  /** How long a run may take to report its outcome. Default 30 s. */
  outcomeTimeoutMs?: number;
  /** Runs only the checks whose name contains one of these texts (registration always runs). */
  only?: readonly string[];
  /** The kit's clock (its waits). The worker runs on real time: leave it unless testing the kit. */
  clock?: Clock;
}

/** The registration heartbeat interval the stand-in asks for: shorter than any worker's default. */
export const ASKED_HEARTBEAT_MS = 250;

/** What the worker-side checks share. */
export interface WorkerSideContext {
  readonly options: WorkerSideOptions;
  readonly standIn: StandInScheduler;
  readonly worker: WorkerUnderTest;
  readonly clock: Clock;
  /** The worker's registration, once the first check found it. */
  registration?: { request: Received; workerId: string; url: string };
  /** Calls to the worker at the URL it registered. */
  probe?: ConformanceProbe;
}

/** One check of what a worker sends; it throws Expectation (fail) or NotApplicable (skip). */
export interface WorkerSideCheck {
  readonly name: string;
  readonly section: ContractSection;
  run(context: WorkerSideContext): Promise<string>;
}

/** The registration and the probe, or a failure saying the worker never registered. */
export function registered(
  ctx: WorkerSideContext,
): Required<Pick<WorkerSideContext, 'registration' | 'probe'>> {
  if (!ctx.registration || !ctx.probe)
    throw new Expectation('the worker did not register, so this could not be tried');
  return { registration: ctx.registration, probe: ctx.probe };
}

/** The callbacks the worker sent for a task (`what`: notify, heartbeat, progress, logs). */
export function callbacksOf(
  standIn: StandInScheduler,
  taskId: string,
  what?: 'notify' | 'heartbeat' | 'progress' | 'logs',
): Received[] {
  const prefix = `/v1/tasks/${encodeURIComponent(taskId)}/`;
  return standIn.where(
    (r) =>
      r.method === 'PUT' &&
      r.path.startsWith(prefix) &&
      (what === undefined || r.path === prefix + what),
  );
}

/** The fence header of a request, as a number (NaN when missing or not a number). */
export function fenceOf(r: Received): number {
  const v = r.headers[HEADER.FENCE];
  return Number(Array.isArray(v) ? v[0] : (v ?? 'x'));
}

/** The body's field, read from a JSON object body. */
export function field(r: Received, name: string): unknown {
  return typeof r.body === 'object' && r.body !== null
    ? (r.body as Record<string, unknown>)[name]
    : undefined;
}

/** A line of a log batch, as the checks read it. */
export interface SentLine {
  seq: number;
  level: unknown;
  message: unknown;
  at: unknown;
}

/** One attempt's lines as the worker sent them: by the per-task call, or in PUT /v1/attempt-logs. */
export interface SentLogBatch {
  request: Received;
  attempt: unknown;
  fence: number;
  lines: SentLine[];
}

const linesIn = (v: unknown): SentLine[] => (Array.isArray(v) ? (v as SentLine[]) : []);

/** Whether the request carries lines of the task (either form of the log call). */
export function carriesLogsOf(
  r: { method: string; path: string; body: unknown },
  taskId: string,
): boolean {
  if (r.method !== 'PUT') return false;
  if (r.path === `/v1/tasks/${encodeURIComponent(taskId)}/logs`) return true;
  const batches = (r.body as { batches?: unknown } | undefined)?.batches;
  return (
    r.path === '/v1/attempt-logs' &&
    Array.isArray(batches) &&
    batches.some((b) => (b as { task_id?: unknown }).task_id === taskId)
  );
}

/** The log batches the worker sent for a task, in the order they arrived. */
export function logBatchesOf(standIn: StandInScheduler, taskId: string): SentLogBatch[] {
  return standIn
    .where((r) => carriesLogsOf(r, taskId))
    .flatMap((r) =>
      r.path === '/v1/attempt-logs'
        ? (field(r, 'batches') as Record<string, unknown>[])
            .filter((b) => b.task_id === taskId)
            .map((b) => ({
              request: r,
              attempt: b.attempt,
              fence: typeof b.fence === 'number' ? b.fence : NaN,
              lines: linesIn(b.lines),
            }))
        : [
            {
              request: r,
              attempt: field(r, 'attempt'),
              fence: fenceOf(r),
              lines: linesIn(field(r, 'lines')),
            },
          ],
    );
}
