import { TaskStatus } from '../enums/task-status.enum';
import { Check } from './conformance-check';
import { OUTCOMES } from './conformance-probe';
import { NotApplicable, expect, expectStatus, needOutcome } from './expectations';

/**
 * The happy path on one task, in order: create (and again: idempotent), query, status, change,
 * pause/continue, prepare, run, heartbeat, progress, outcome, summary, rollback, clean.
 */
export const LIFECYCLE_CHECKS: readonly Check[] = [
  {
    name: 'create: answers CREATE',
    run: async ({ probe, main }) => {
      const data = await probe.ok(probe.create(main, 1), 'create');
      expectStatus(data, TaskStatus.CREATE, 'create');
      expect(
        data.task_id === main,
        `create answered task_id ${String(data.task_id)}, expected ${main}`,
      );
      return 'task in CREATE';
    },
  },
  {
    name: 'create: idempotent on task_id',
    section: 'Idempotency and attempts',
    run: async ({ probe, main }) => {
      const again = await probe.ok(probe.create(main, 1), 'repeated create');
      expectStatus(again, TaskStatus.CREATE, 'repeated create');
      const items = await probe.queryItems({ task_id: main });
      expect(
        items.length === 1,
        `query found ${items.length} tasks for one task_id after two creates`,
      );
      return 'second create answered the same task, one task stored';
    },
  },
  {
    name: 'query: finds the task by task_id and by task_name',
    run: async ({ probe, main }) => {
      const byId = await probe.queryItems({ task_id: main });
      expect(
        byId.length === 1 && byId[0].task_id === main,
        'query by task_id did not return the task',
      );
      const byName = await probe.queryItems({ task_name: probe.taskName(main) });
      expect(
        byName.some((t) => t.task_id === main),
        'query by task_name did not return the task',
      );
      const none = await probe.queryItems({ task_id: probe.taskId('never-created') });
      expect(none.length === 0, 'query of an unknown task_id returned items');
      return 'by id, by name, and empty for an unknown id';
    },
  },
  {
    name: 'status: CREATE, and NONE for an unknown task',
    run: async ({ probe, main }) => {
      const data = await probe.ok(probe.read(main, 'status'), 'status');
      expectStatus(data, TaskStatus.CREATE, 'status');
      const unknown = await probe.ok(
        probe.read(probe.taskId('unknown'), 'status'),
        'status of an unknown task',
      );
      expectStatus(unknown, TaskStatus.NONE, 'status of an unknown task');
      return 'CREATE / NONE';
    },
  },
  {
    name: 'change: replaces params before the run',
    run: async ({ probe, main }) => {
      const params = { ...(probe.options.params ?? {}) };
      const data = await probe.optional(probe.write(main, 'change', 1, { params }), 'change');
      expect(
        JSON.stringify(data.params) === JSON.stringify(params),
        'change did not store the new params',
      );
      expectStatus(data, TaskStatus.CREATE, 'change');
      return 'params replaced, status unchanged';
    },
  },
  {
    name: 'pause / continue before the run',
    section: 'Pausing',
    run: async ({ probe, main }) => {
      const paused = await probe.optional(probe.write(main, 'pause', 1), 'pause');
      expectStatus(paused, TaskStatus.PAUSE, 'pause');
      const resumed = await probe.optional(probe.write(main, 'continue', 1), 'continue');
      expectStatus(resumed, TaskStatus.CREATE, 'continue');
      return 'CREATE -> PAUSE -> CREATE';
    },
  },
  {
    name: 'prepare: CREATE -> PREPARE',
    run: async ({ probe, main }) => {
      const data = await probe.optional(probe.write(main, 'prepare', 1), 'prepare');
      expectStatus(data, TaskStatus.PREPARE, 'prepare');
      return 'PREPARE';
    },
  },
  {
    name: 'run: answers RUNNING (async) or the outcome (sync)',
    run: async (ctx) => {
      const { probe, main } = ctx;
      const data = await probe.ok(probe.write(main, 'running', 1), 'run');
      const status = String(data.task_status);
      expect(
        status === TaskStatus.RUNNING || OUTCOMES.has(status),
        `run answered ${status}, expected RUNNING, SUCCESS or FAIL`,
      );
      if (OUTCOMES.has(status)) ctx.outcome = status;
      return `answered ${status}`;
    },
  },
  {
    name: 'heartbeat: answers alive and status',
    run: async ({ probe, main }) => {
      const data = await probe.ok(probe.read(main, 'heartbeat'), 'heartbeat');
      expect(typeof data.alive === 'boolean', 'heartbeat data has no boolean alive');
      expect(typeof data.task_status === 'string', 'heartbeat data has no task_status');
      return `alive=${String(data.alive)} status=${String(data.task_status)}`;
    },
  },
  {
    name: 'progress: answers a percent',
    run: async ({ probe, main }) => {
      const data = await probe.optional(probe.read(main, 'progress'), 'progress');
      const percent = data.percent;
      expect(
        typeof percent === 'number' && percent >= 0 && percent <= 100,
        `progress percent ${String(percent)} is not in [0, 100]`,
      );
      return `${String(percent)}%`;
    },
  },
  {
    name: 'outcome: the run reaches SUCCESS or FAIL',
    run: async (ctx) => {
      const { probe, main } = ctx;
      if (!ctx.outcome) ctx.outcome = await probe.waitForOutcome(main);
      return ctx.outcome;
    },
  },
  {
    name: 'summary: answers a summary line',
    run: async ({ probe, main }) => {
      const data = await probe.optional(probe.read(main, 'summary'), 'summary');
      expect(typeof data.summary === 'string', 'summary data has no summary string');
      return JSON.stringify(data.summary);
    },
  },
  {
    name: 'rollback: SUCCESS/FAIL -> ROLLBACK',
    run: async (ctx) => {
      const { probe, main } = ctx;
      needOutcome(ctx.outcome);
      const data = await probe.optional(probe.write(main, 'rollback', 1), 'rollback');
      expectStatus(data, TaskStatus.ROLLBACK, 'rollback');
      return 'ROLLBACK';
    },
  },
  {
    name: 'clean: -> FINISH',
    run: async (ctx) => {
      const { probe, main } = ctx;
      needOutcome(ctx.outcome);
      const data = await probe.optional(probe.write(main, 'clean', 1), 'clean');
      expectStatus(data, TaskStatus.FINISH, 'clean');
      return 'FINISH';
    },
  },
  {
    // Contract 1.2.0: a scheduler that crashed after the worker's clean sends it again.
    name: 'clean: a repeat answers FINISH and changes nothing',
    section: 'Idempotency and attempts',
    run: async (ctx) => {
      const { probe, main } = ctx;
      needOutcome(ctx.outcome);
      const before = await probe.ok(probe.read(main, 'status'), 'status');
      if (before.task_status !== TaskStatus.FINISH)
        throw new NotApplicable('the task was not cleaned (clean is not implemented)');
      const data = await probe.optional(probe.write(main, 'clean', 1), 'clean');
      expectStatus(data, TaskStatus.FINISH, 'a repeated clean');
      const after = await probe.ok(probe.read(main, 'status'), 'status');
      expectStatus(after, TaskStatus.FINISH, 'status after a repeated clean');
      return 'FINISH, unchanged';
    },
  },
];
