/** `baton tasks ...`: list, look at, create and act on tasks, and read what their workers logged. */
import { readObject } from '../topology-files';
import { Cli, Column, EXIT, Group, UsageProblem, Values } from './cli';

interface Task {
  task_id: string;
  task_type: string;
  task_name: string;
  tenant: string;
  task_status: string;
  outcome: string | null;
  attempt: number;
  worker_id: string | null;
  error: string | null;
  created_at: string;
  finished_at: string | null;
  [field: string]: unknown;
}

interface LogPage {
  items: { seq: number; at: string; level: string; message: string; fields?: unknown }[];
  next_after: number;
  has_more: boolean;
  dropped: number;
}

export const TASK_COLUMNS: Column<Task>[] = [
  ['id', (t) => t.task_id],
  ['type', (t) => t.task_type],
  ['name', (t) => t.task_name],
  ['status', (t) => t.task_status],
  ['outcome', (t) => t.outcome],
  ['attempt', (t) => t.attempt],
  ['created', (t) => t.created_at],
];

const TASK_FIELDS: string[] = [
  'task_id',
  'task_type',
  'task_name',
  'tenant',
  'task_status',
  'outcome',
  'attempt',
  'worker_id',
  'error',
  'created_at',
  'finished_at',
];

/** A task as lines of fields: the ones people look at first, then the rest that are set. */
export function showTask(cli: Cli, task: Task): void {
  const rest = Object.keys(task).filter((k) => !TASK_FIELDS.includes(k));
  cli.record(
    [...TASK_FIELDS, ...rest]
      .filter((k) => task[k] !== null && task[k] !== undefined)
      .map((k) => [k, task[k]]),
    task,
  );
}

const path = (id: string, tail = ''): string => `/v1/tasks/${encodeURIComponent(id)}${tail}`;

/** Waits until the task FINISHes; exit 0 when its outcome is SUCCESS, 4 otherwise. */
async function waitFor(cli: Cli, id: string, timeout: string | undefined): Promise<number> {
  const timeoutMs = seconds(timeout ?? '3600', '--timeout') * 1000;
  const task = (await cli.client.waitForTask(id, ['FINISH'], { timeoutMs })) as unknown as Task;
  showTask(cli, task);
  return task.outcome === 'SUCCESS' ? EXIT.ok : EXIT.unsuccessful;
}

export function seconds(value: string, option: string): number {
  const n = Number(value);
  if (!Number.isFinite(n) || n <= 0) throw new UsageProblem(`${option} is a number of seconds`);
  return n;
}

/** Prints log lines, `[at] LEVEL message {fields}`, or one JSON object a line with --json. */
function printLines(cli: Cli, page: LogPage): void {
  for (const l of page.items)
    cli.out(
      cli.json
        ? `${JSON.stringify(l)}\n`
        : `${l.at} ${l.level.toUpperCase().padEnd(5)} ${l.message}${l.fields && Object.keys(l.fields).length ? ` ${JSON.stringify(l.fields)}` : ''}\n`,
    );
}

/**
 * How long --follow reads on after the attempt is over: a worker sends its lines in batches
 * (every half second), so its last ones may come in after the outcome.
 */
const TAIL_MS = 3000;

/**
 * What the worker logged in an attempt (the latest unless --attempt), oldest first; --follow
 * goes on printing new lines every second until the attempt is over and its last lines are in.
 */
async function logs(cli: Cli, id: string, values: Values): Promise<number> {
  let task = (await cli.client.getTask(id)) as unknown as Task;
  const attempt = values.attempt === undefined ? task.attempt : Number(values.attempt);
  if (!Number.isInteger(attempt) || attempt < 1)
    throw new UsageProblem(
      values.attempt === undefined
        ? `task ${id} has not started an attempt yet`
        : '--attempt is a whole number from 1',
    );
  const query = { level: values.level as string | undefined, q: values.grep as string | undefined };
  let after = -1;
  let warned = false;
  let endedAt: number | undefined;
  for (;;) {
    const page = await cli.client.call<LogPage>({
      method: 'GET',
      path: path(id, `/attempts/${attempt}/logs`),
      query: { ...query, after, limit: 500 },
      resend: 'any',
    });
    if (page.dropped > 0 && !warned) {
      cli.err(
        `(${page.dropped} older lines of this attempt were dropped by the scheduler's limits)\n`,
      );
      warned = true;
    }
    printLines(cli, page);
    after = page.next_after;
    if (page.has_more) continue;
    if (!values.follow) return EXIT.ok;
    if (endedAt === undefined) {
      // Over once the task has moved past this attempt, or no longer runs it.
      if (task.attempt !== attempt || !['RUNNING', 'PAUSE'].includes(task.task_status))
        endedAt = cli.clock.monotonic();
    } else if (page.items.length === 0 && cli.clock.monotonic() - endedAt >= TAIL_MS) {
      return EXIT.ok;
    }
    await cli.clock.sleep(1000);
    if (endedAt === undefined) task = (await cli.client.getTask(id)) as unknown as Task;
  }
}

/** A task action (cancel, retry, ...): POST, then the task as it is now. */
function action(verb: string, summary: string): Group[string] {
  return {
    usage: '<task-id>',
    summary,
    args: 1,
    async run(cli, [id]) {
      const task = await cli.client.call<Task>({
        method: 'POST',
        path: path(id, `/${verb}`),
        body: {},
        resend: 'unsent',
      });
      cli.done(
        `${verb}: task ${task.task_id} is ${task.task_status}${task.outcome ? ` (${task.outcome})` : ''}`,
        task,
      );
      return EXIT.ok;
    },
  };
}

/** Labels as given on the command line (`--label team:dba`), each key:value. */
function labelOf(values: Values): string | undefined {
  const label = values.label as string | undefined;
  if (label !== undefined && !/^[^:]+:.+$/.test(label))
    throw new UsageProblem('--label is key:value (team:dba)');
  return label;
}

export const TASKS: Group = {
  list: {
    usage:
      '[--type T] [--status S,S] [--outcome O] [--tenant T] [--label k:v] [--search words] [--limit N] [--cursor C]',
    summary: 'tasks, newest first (a page; --cursor for the next)',
    options: {
      type: { type: 'string' },
      status: { type: 'string' },
      outcome: { type: 'string' },
      tenant: { type: 'string' },
      label: { type: 'string' },
      search: { type: 'string' },
      limit: { type: 'string' },
      cursor: { type: 'string' },
    },
    async run(cli, _args, values) {
      const page = await cli.client.call<{ items: Task[]; next_cursor?: string | null }>({
        method: 'GET',
        path: '/v1/tasks',
        query: {
          task_type: values.type as string | undefined,
          status: values.status as string | undefined,
          outcome: values.outcome as string | undefined,
          tenant: values.tenant as string | undefined,
          label: labelOf(values),
          search: values.search as string | undefined,
          limit: values.limit as string | undefined,
          cursor: values.cursor as string | undefined,
        },
        resend: 'any',
      });
      cli.table(page.items, TASK_COLUMNS, page);
      if (page.next_cursor && !cli.json) cli.err(`more: --cursor ${page.next_cursor}\n`);
      return EXIT.ok;
    },
  },
  get: {
    usage: '<task-id>',
    summary: 'one task, every field',
    args: 1,
    async run(cli, [id]) {
      showTask(cli, (await cli.client.getTask(id)) as unknown as Task);
      return EXIT.ok;
    },
  },
  create: {
    usage: '-f <file.json|file.yaml|-> [--idempotency-key K] [--wait] [--timeout S]',
    summary: 'create a task from a file (the body of POST /v1/tasks); --wait until it finishes',
    options: {
      file: { type: 'string', short: 'f' },
      'idempotency-key': { type: 'string' },
      wait: { type: 'boolean' },
      timeout: { type: 'string' },
    },
    async run(cli, _args, values) {
      if (values.file === undefined)
        throw new UsageProblem('create needs -f <file> (- for standard input)');
      const body = readObject(values.file as string);
      const task = (await cli.client.createTask(body as never, {
        idempotencyKey: values['idempotency-key'] as string | undefined,
      })) as unknown as Task;
      if (!values.wait) {
        cli.made(task.task_id, task);
        return EXIT.ok;
      }
      cli.err(`created ${task.task_id}; waiting for it to finish\n`);
      return waitFor(cli, task.task_id, values.timeout as string | undefined);
    },
  },
  wait: {
    usage: '<task-id> [--timeout S]',
    summary: 'wait until a task finishes: exit 0 on SUCCESS, 4 on any other outcome',
    args: 1,
    options: { timeout: { type: 'string' } },
    run: (cli, [id], values) => waitFor(cli, id, values.timeout as string | undefined),
  },
  events: {
    usage: '<task-id>',
    summary: 'the lifecycle log: every transition, who, when and why',
    args: 1,
    async run(cli, [id]) {
      const events = await cli.client.events(id);
      cli.table(events as unknown as Record<string, unknown>[], [
        ['at', (e) => e.at],
        ['from', (e) => e.from],
        ['to', (e) => e.to],
        ['attempt', (e) => e.attempt],
        ['actor', (e) => e.actor],
        ['reason', (e) => e.reason],
      ]);
      return EXIT.ok;
    },
  },
  logs: {
    usage: '<task-id> [--attempt N] [--level info|warn|error] [--grep text] [--follow]',
    summary: "what the task's worker logged in an attempt (the latest by default)",
    args: 1,
    options: {
      attempt: { type: 'string' },
      level: { type: 'string' },
      grep: { type: 'string' },
      follow: { type: 'boolean', short: 'F' },
    },
    run: (cli, [id], values) => logs(cli, id, values),
  },
  cancel: action('cancel', 'cancel a task: a running one is told to stop; no retry follows'),
  retry: action('retry', 'retry a failed task now'),
  pause: action('pause', 'pause a task'),
  continue: action('continue', 'continue a paused task'),
  rerun: action('rerun', 'run a finished task again (same id, next attempt)'),
};
