import { Timer } from '@baton/time';
import { TaskStatus } from '../../enums/task-status.enum';
import { LOG_LINE_LEVELS } from '../../dto/callback.dto';
import { ConformanceProbe } from '../conformance-probe';
import { expect, Expectation, NotApplicable } from '../expectations';
import { Received, RESET, STALE, UNAVAILABLE } from './stand-in-scheduler';
import {
  ASKED_HEARTBEAT_MS,
  WorkerSideCheck,
  WorkerSideContext,
  SentLogBatch,
  callbacksOf,
  carriesLogsOf,
  fenceOf,
  logBatchesOf,
  field,
  registered,
} from './worker-side-check';

const SEMVER = /^\d+\.\d+\.\d+$/;
/** Heartbeats measured to judge the interval the worker follows. */
const BEATS = 5;
/** The median gap may be this many times the asked interval (a busy box is late, never 8×). */
const GAP_SLACK = 4;

const isPut = (r: Received, what: string, taskId: string): boolean =>
  r.method === 'PUT' && r.path === `/v1/tasks/${encodeURIComponent(taskId)}/${what}`;

/** Creates and runs task `id` of the type under test with the kit's params: RUNNING. */
async function startRun(ctx: WorkerSideContext, id: string, fence = 1, attempt = 1): Promise<void> {
  const { probe } = registered(ctx);
  await probe.ok(probe.create(id, fence, attempt), 'create');
  const run = await probe.ok(probe.write(id, 'running', fence), 'run');
  if (run.task_status !== TaskStatus.RUNNING)
    throw new NotApplicable(
      `the run answered ${String(run.task_status)}: a sync type reports in its answer, give an async --type`,
    );
}

/** Waits for the run's outcome report that the stand-in took (answered 200). */
function acceptedNotify(ctx: WorkerSideContext, id: string): Promise<Received> {
  return ctx.standIn.waitFor(
    `the outcome report of ${id} (PUT /v1/tasks/{id}/notify)`,
    (ctx.options.outcomeTimeoutMs ?? 30_000) + 10_000,
    () => callbacksOf(ctx.standIn, id, 'notify').find((r) => r.answered === 200),
  );
}

/** Waits for the run's first outcome report, whatever the stand-in answered it. */
function firstNotify(ctx: WorkerSideContext, id: string): Promise<Received> {
  return ctx.standIn.waitFor(
    `the outcome report of ${id}`,
    (ctx.options.outcomeTimeoutMs ?? 30_000) + 10_000,
    () => callbacksOf(ctx.standIn, id, 'notify')[0],
  );
}

/** Waits until `n` registration heartbeats arrived after `after` (a sign the worker went on). */
function beatsAfter(ctx: WorkerSideContext, after: number, n: number): Promise<Received[]> {
  const { registration } = registered(ctx);
  const path = `/v1/workers/${encodeURIComponent(registration.workerId)}/heartbeat`;
  return ctx.standIn.waitFor(`${n} registration heartbeats`, 30_000, () => {
    const beats = ctx.standIn.where((r) => r.path === path && r.seq > after && !r.authError);
    return beats.length >= n ? beats : undefined;
  });
}

const registration: WorkerSideCheck = {
  name: 'worker side: registers with its id, URL, contract version, task types and capacity',
  section: 'Timing',
  async run(ctx) {
    const reg = await ctx.standIn.waitFor(
      'the worker registering (POST /v1/workers)',
      ctx.options.startTimeoutMs ?? 30_000,
      () => ctx.standIn.where((r) => r.method === 'POST' && r.path === '/v1/workers')[0],
    );
    expect(!reg.authError, `the registration was not authenticated: ${reg.authError}`);
    const workerId = field(reg, 'worker_id');
    const url = field(reg, 'url');
    expect(typeof workerId === 'string' && workerId !== '', 'the registration has no worker_id');
    expect(
      typeof url === 'string' && /^https?:\/\/[^/]+/.test(url),
      `url ${String(url)} is not an http(s) URL`,
    );
    ctx.registration = { request: reg, workerId, url };
    ctx.probe = new ConformanceProbe({ ...ctx.options, url: url.replace(/\/$/, '') });
    const version = field(reg, 'contract_version');
    expect(
      typeof version === 'string' && SEMVER.test(version),
      `the registration names no contract_version (a scheduler takes it as 1.0.0 and refuses it by default): ${JSON.stringify(version)}`,
    );
    const capacity = field(reg, 'capacity');
    expect(
      typeof capacity === 'number' && Number.isInteger(capacity) && capacity > 0,
      `capacity ${String(capacity)} is not a positive integer`,
    );
    const types = field(reg, 'task_types');
    expect(Array.isArray(types) && types.length > 0, 'the registration lists no task_types');
    for (const t of types as Record<string, unknown>[])
      expect(
        typeof t.task_type === 'string' &&
          (t.blocking === 'sync' || t.blocking === 'async') &&
          Array.isArray(t.implements),
        `task type ${JSON.stringify(t)} lacks task_type, blocking (sync|async) or implements`,
      );
    const names = (types as { task_type: string }[]).map((t) => t.task_type);
    expect(
      names.includes(ctx.options.type),
      `${ctx.options.type} is not among ${names.join(', ')}`,
    );
    return `${workerId} at ${url}, contract ${version}, capacity ${capacity}, types ${names.join(', ')}`;
  },
};

const timing: WorkerSideCheck = {
  name: 'worker side: heartbeats as often as the registration answer asks',
  section: 'Timing',
  async run(ctx) {
    const { registration: reg } = registered(ctx);
    const path = `/v1/workers/${encodeURIComponent(reg.workerId)}/heartbeat`;
    let beats: Received[];
    try {
      beats = await ctx.standIn.waitFor(`${BEATS} registration heartbeats`, 20_000, () => {
        const b = ctx.standIn.where((r) => r.path === path && r.seq > reg.request.seq);
        return b.length >= BEATS ? b.slice(0, BEATS) : undefined;
      });
    } catch {
      const seen = ctx.standIn.where((r) => r.path === path).length;
      throw new Expectation(
        `${seen} heartbeats (PUT ${path}) in 20 s, asked for one every ${ASKED_HEARTBEAT_MS} ms (timing.heartbeat_interval_ms)`,
      );
    }
    const refused = beats.find((b) => b.authError);
    expect(!refused, `a heartbeat was not authenticated: ${refused?.authError}`);
    const gaps = beats.slice(1).map((b, i) => b.at - beats[i].at);
    const median = [...gaps].sort((a, b) => a - b)[Math.floor(gaps.length / 2)];
    expect(
      median <= ASKED_HEARTBEAT_MS * GAP_SLACK,
      `heartbeats every ${median} ms (median of ${gaps.join(', ')}), asked for every ${ASKED_HEARTBEAT_MS} ms`,
    );
    return `every ${median} ms (gaps ${gaps.join(', ')}), asked for ${ASKED_HEARTBEAT_MS} ms`;
  },
};

const fences: WorkerSideCheck = {
  name: 'worker side: callbacks carry the highest fence accepted and the attempt that ran',
  section: 'Callbacks',
  async run(ctx) {
    const { probe } = registered(ctx);
    const id = probe.taskId('ws-fence');
    await startRun(ctx, id, 3, 2);
    // The same attempt again with a newer fence (a scheduler that took the task over): the
    // worker keeps the higher fence, and what it sends from then on carries it.
    await probe.ok(probe.create(id, 8, 2), 'create of the same attempt with a higher fence');
    const raisedAt = ctx.standIn.received.length;
    const notify = await acceptedNotify(ctx, id);
    // Every callback of the run, log batches of either form included.
    const sent = [
      ...callbacksOf(ctx.standIn, id)
        .filter((r) => !r.path.endsWith('/logs'))
        .map((r) => ({
          kind: r.path.split('/').pop() as string,
          seq: r.seq,
          attempt: field(r, 'attempt'),
          fence: fenceOf(r),
        })),
      ...logBatchesOf(ctx.standIn, id).map((b) => ({
        kind: 'logs',
        seq: b.request.seq,
        attempt: b.attempt,
        fence: b.fence,
      })),
    ].sort((a, b) => a.seq - b.seq);
    // One callback of each kind may have been on its way when the fence was raised (each kind
    // goes one at a time); any after it carries 8.
    const staleAfterRaise = new Map<string, number>();
    for (const r of sent) {
      const what = `${r.kind} #${r.seq}`;
      expect(r.attempt === 2, `${what} carries attempt ${String(r.attempt)}, not 2`);
      expect(
        r.fence === 3 || r.fence === 8,
        `${what} carries fence ${r.fence}, not one it was given (3, 8)`,
      );
      if (r.seq < raisedAt || r.fence === 8) continue;
      const stale = (staleAfterRaise.get(r.kind) ?? 0) + 1;
      staleAfterRaise.set(r.kind, stale);
      expect(stale === 1, `${what} still carries fence 3 after the fence was raised to 8`);
    }
    expect(fenceOf(notify) === 8, `the outcome report carries fence ${fenceOf(notify)}, not 8`);
    return `${sent.length} callbacks, each with attempt 2 and its fence (the outcome with 8)`;
  },
};

const retries: WorkerSideCheck = {
  name: 'worker side: retries an outcome report after a 5xx and after a dropped connection',
  section: 'Callbacks',
  async run(ctx) {
    const { probe } = registered(ctx);
    const id = probe.taskId('ws-retry');
    ctx.standIn.failNext((r) => isPut(r as Received, 'notify', id), UNAVAILABLE, RESET);
    await startRun(ctx, id);
    await firstNotify(ctx, id);
    // The library's third try comes 1 s after the first; 15 s is plenty on a busy box.
    const accepted = await ctx.standIn
      .waitFor('the retries', 15_000, () =>
        callbacksOf(ctx.standIn, id, 'notify').find((r) => r.answered === 200),
      )
      .catch(() => {
        const sent = callbacksOf(ctx.standIn, id, 'notify').map((r) => String(r.answered));
        throw new Expectation(
          `the outcome report was sent ${sent.length} time(s) (answered ${sent.join(', ')}) and not again within 15 s`,
        );
      });
    const tries = callbacksOf(ctx.standIn, id, 'notify');
    expect(
      tries.length === 3,
      `${tries.length} tries of the outcome report, expected 3 (503, reset, 200)`,
    );
    const first = JSON.stringify(tries[0].body);
    expect(
      tries.every((t) => JSON.stringify(t.body) === first),
      'a retry of the outcome report changed its body',
    );
    return `3 tries (503, dropped connection, 200); ${String(field(accepted, 'task_status'))} reported once taken`;
  },
};

const drop409: WorkerSideCheck = {
  name: 'worker side: drops an outcome report answered 409 (not retried)',
  section: 'Callbacks',
  async run(ctx) {
    const { probe } = registered(ctx);
    const id = probe.taskId('ws-409');
    ctx.standIn.failNext((r) => isPut(r as Received, 'notify', id), STALE, STALE, STALE, STALE);
    await startRun(ctx, id);
    const first = await firstNotify(ctx, id);
    // Long enough for a retry (the library's first comes after 200 ms, a slower one within a
    // few seconds): the worker beat on, and 5 s passed.
    await beatsAfter(ctx, first.seq, 4);
    const waitUntil = first.at + 5000;
    if (ctx.clock.now() < waitUntil) await probe.wait(waitUntil - ctx.clock.now());
    const tries = callbacksOf(ctx.standIn, id, 'notify').length;
    expect(tries === 1, `the report answered 409 was sent ${tries} times`);
    return 'sent once, answered 409, not sent again';
  },
};

const logs: WorkerSideCheck = {
  name: 'worker side: sends log lines numbered from 0, in order, again after a 5xx',
  section: 'Callbacks',
  async run(ctx) {
    const { probe } = registered(ctx);
    const id = probe.taskId('ws-logs');
    ctx.standIn.failNext((r) => carriesLogsOf(r, id), UNAVAILABLE);
    await startRun(ctx, id);
    const notify = await acceptedNotify(ctx, id);
    // Logs are optional: a worker that sends none for the run has nothing to check.
    await ctx.standIn
      .waitFor('a log batch', 3000, () => logBatchesOf(ctx.standIn, id)[0])
      .catch(() => {
        throw new NotApplicable('the worker sent no log lines for the run (logs are optional)');
      });
    const refused = logBatchesOf(ctx.standIn, id)[0];
    const refusedSeqs = refused.lines.map((l) => l.seq);
    const taken = (): SentLogBatch[] =>
      logBatchesOf(ctx.standIn, id).filter((b) => b.request.answered === 200);
    const kept = await ctx.standIn
      .waitFor('the log lines answered 503 sent again', 15_000, () => {
        const seqs = new Set(taken().flatMap((b) => b.lines.map((l) => l.seq)));
        return refusedSeqs.every((q) => seqs.has(q)) ? seqs : undefined;
      })
      .catch(() => {
        throw new Expectation(
          `the batch answered 503 (seq ${refusedSeqs.join(', ')}) was not sent again`,
        );
      });
    const batches = logBatchesOf(ctx.standIn, id);
    for (const b of batches) {
      const what = `log batch #${b.request.seq}`;
      expect(
        b.attempt === field(notify, 'attempt'),
        `${what} carries attempt ${String(b.attempt)}`,
      );
      expect(Number.isInteger(b.fence), `${what} carries no fence`);
      const lines = b.lines;
      expect(
        lines.length >= 1 && lines.length <= 500,
        `${what} has ${lines.length} lines (1 to 500)`,
      );
      lines.forEach((l, i) => {
        expect(
          i === 0 || l.seq === lines[i - 1].seq + 1,
          `${what}: seq ${l.seq} does not follow ${lines[i - 1]?.seq}`,
        );
        expect(
          LOG_LINE_LEVELS.includes(l.level as never),
          `log line ${l.seq}: level ${String(l.level)}`,
        );
        expect(
          typeof l.message === 'string' && l.message.length <= 4000,
          `log line ${l.seq}: message`,
        );
        expect(
          typeof l.at === 'string' && !Number.isNaN(Date.parse(l.at)),
          `log line ${l.seq}: at ${String(l.at)}`,
        );
      });
    }
    for (const l of refused.lines) {
      const again = taken()
        .flatMap((b) => b.lines)
        .find((x) => x.seq === l.seq);
      expect(again?.message === l.message, `line ${l.seq} was sent again with another text`);
    }
    const max = Math.max(...kept);
    expect(kept.size === max + 1, `the lines taken are not numbered 0 to ${max} without a gap`);
    return `${kept.size} lines in ${batches.length} batches; the batch answered 503 sent again`;
  },
};

const sigterm: WorkerSideCheck = {
  name: 'worker side: on SIGTERM, exits without reporting its runs failed',
  section: 'Crash recovery',
  async run(ctx) {
    const { probe } = registered(ctx);
    const id = probe.taskId('ws-sigterm');
    await startRun(ctx, id);
    const at = ctx.standIn.received.length;
    ctx.worker.terminate();
    const t0 = ctx.clock.now();
    let timer: Timer | undefined;
    const gone = await Promise.race([
      ctx.worker.exited,
      new Promise<undefined>(
        (resolve) => (timer = ctx.clock.setTimeout(() => resolve(undefined), 30_000)),
      ),
    ]);
    ctx.clock.clearTimeout(timer);
    expect(gone !== undefined, 'the worker did not exit within 30 s of SIGTERM');
    // What it sent just before it went is read to the end before it is judged.
    await ctx.standIn.waitFor('the last requests read', 5000, () =>
      ctx.standIn.idle ? true : undefined,
    );
    const failed = callbacksOf(ctx.standIn, id, 'notify').filter(
      (r) => r.seq >= at && field(r, 'task_status') === TaskStatus.FAIL,
    );
    expect(
      failed.length === 0,
      'the run stopped by SIGTERM was reported FAIL: a deploy would fail it',
    );
    return `exited (${gone}) ${ctx.clock.now() - t0} ms after SIGTERM; the stopped run not reported`;
  },
};

/** The worker-side checks, in the order they run (SIGTERM last: it ends the worker). */
export const WORKER_SIDE_CHECKS: readonly WorkerSideCheck[] = [
  registration,
  timing,
  fences,
  retries,
  drop409,
  logs,
  sigterm,
];
