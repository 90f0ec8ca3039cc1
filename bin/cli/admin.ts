/** `baton timers|workers|keys ...`: the fleet's timers, its workers and its API keys. */
import type { components } from '@baton/scheduler-client';
import { readObject } from '../topology-files';
import { Cli, EXIT, Group, UsageProblem } from './cli';

// The API's shapes, as the client generated from openapi/scheduler.v1.json has them.
type Timer = components['schemas']['TimerDto'];
type Worker = components['schemas']['WorkerDto'];
type ApiKey = components['schemas']['NewApiKeyDto'];

const timerPath = (id: string): string => `/v1/timers/${encodeURIComponent(id)}`;
const workerPath = (id: string, tail = ''): string =>
  `/v1/workers/${encodeURIComponent(id)}${tail}`;

/** A schedule in one cell: `cron 0 0 3 * * * (Europe/Berlin)`, `every 60000 ms`, `once at ...`. */
export function scheduleText(s: Timer['schedule']): string {
  if (s.kind === 'cron')
    return `cron ${String(s.cron)}${s.time_zone ? ` (${String(s.time_zone)})` : ''}`;
  if (s.kind === 'interval') return `every ${String(s.every_ms)} ms`;
  if (s.kind === 'once') return `once at ${String(s.at)}`;
  return JSON.stringify(s);
}

function showRecord(cli: Cli, value: Record<string, unknown>): void {
  cli.record(
    Object.entries(value).filter(([, v]) => v !== null && v !== undefined),
    value,
  );
}

function enable(on: boolean): Group[string] {
  return {
    usage: '<timer-id>',
    summary: on ? 'start a timer again' : 'stop a timer (it stays defined)',
    args: 1,
    async run(cli, [id]) {
      const timer = await cli.client.call<Timer>({
        method: 'PATCH',
        path: timerPath(id),
        body: { enabled: on },
        resend: 'any',
      });
      cli.done(`timer ${timer.timer_id} ${timer.enabled ? 'enabled' : 'disabled'}`, timer);
      return EXIT.ok;
    },
  };
}

export const TIMERS: Group = {
  list: {
    usage: '[--tenant T]',
    summary: 'timers, with their next and last fire',
    options: { tenant: { type: 'string' } },
    async run(cli, _args, v) {
      const timers = await cli.client.call<Timer[]>({
        method: 'GET',
        path: '/v1/timers',
        query: { tenant: v.tenant as string | undefined },
        resend: 'any',
      });
      cli.table(timers, [
        ['id', (t) => t.timer_id],
        ['name', (t) => t.name],
        ['schedule', (t) => scheduleText(t.schedule)],
        ['enabled', (t) => (t.enabled ? 'yes' : 'no')],
        ['next fire', (t) => t.next_fire_at],
        ['last fire', (t) => t.last_fire_at],
        ['fires', (t) => t.fire_count],
      ]);
      return EXIT.ok;
    },
  },
  get: {
    usage: '<timer-id>',
    summary: 'one timer, every field',
    args: 1,
    async run(cli, [id]) {
      showRecord(
        cli,
        await cli.client.call<Timer>({ method: 'GET', path: timerPath(id), resend: 'any' }),
      );
      return EXIT.ok;
    },
  },
  create: {
    usage: '-f <file.json|file.yaml|->',
    summary: 'define a timer from a file (the body of POST /v1/timers)',
    options: { file: { type: 'string', short: 'f' } },
    async run(cli, _args, v) {
      if (v.file === undefined)
        throw new UsageProblem('create needs -f <file> (- for standard input)');
      const timer = await cli.client.call<Timer>({
        method: 'POST',
        path: '/v1/timers',
        body: readObject(v.file as string),
        resend: 'unsent',
      });
      cli.made(timer.timer_id, timer);
      return EXIT.ok;
    },
  },
  enable: enable(true),
  disable: enable(false),
  delete: {
    usage: '<timer-id>',
    summary: 'delete a timer (the tasks it created stay)',
    args: 1,
    async run(cli, [id]) {
      await cli.client.call({ method: 'DELETE', path: timerPath(id), resend: 'any' });
      cli.say(`timer ${id} deleted`);
      return EXIT.ok;
    },
  },
};

export const WORKERS: Group = {
  list: {
    usage: '',
    summary: 'workers, with health, load, drain and blacklist',
    async run(cli) {
      const workers = (await cli.client.listWorkers()) as unknown as Worker[];
      cli.table(workers, [
        ['id', (w) => w.worker_id],
        ['health', (w) => w.health],
        ['load', (w) => `${w.inflight}/${w.capacity}`],
        ['draining', (w) => (w.draining ? 'yes' : 'no')],
        [
          'blacklisted',
          (w) => {
            const until = w.blacklist ? w.blacklist.until : w.blacklisted_until;
            return w.blacklist || until ? `until ${until ?? 'lifted'}` : undefined;
          },
        ],
        ['types', (w) => w.task_types.join(',')],
        ['url', (w) => w.url],
      ]);
      return EXIT.ok;
    },
  },
  drain: {
    usage: '<worker-id> [--undo]',
    summary: 'no new tasks go to the worker (its running ones finish there); --undo ends the drain',
    args: 1,
    options: { undo: { type: 'boolean' } },
    async run(cli, [id], v) {
      const w = (await cli.client.drainWorker(id, v.undo !== true)) as unknown as Worker;
      cli.done(`worker ${w.worker_id} ${w.draining ? 'draining' : 'takes new tasks again'}`, w);
      return EXIT.ok;
    },
  },
  blacklist: {
    usage: '<worker-id> --reason R [--until 2026-12-01T06:00:00Z]',
    summary: 'take a worker out of the picks, with a reason, until a time or until lifted',
    args: 1,
    options: { reason: { type: 'string' }, until: { type: 'string' } },
    async run(cli, [id], v) {
      if (v.reason === undefined) throw new UsageProblem('blacklist needs --reason');
      const w = await cli.client.call<Worker>({
        method: 'POST',
        path: workerPath(id, '/blacklist'),
        body: { reason: v.reason, ...(v.until !== undefined ? { until: v.until } : {}) },
        resend: 'any',
      });
      const until = w.blacklist?.until ?? w.blacklisted_until;
      cli.done(
        `worker ${w.worker_id} blacklisted${until ? ` until ${until}` : ' until lifted'}`,
        w,
      );
      return EXIT.ok;
    },
  },
  unblacklist: {
    usage: '<worker-id>',
    summary: "lift a worker's blacklist",
    args: 1,
    async run(cli, [id]) {
      const w = (await cli.client.unblacklistWorker(id)) as unknown as Worker;
      cli.done(`worker ${w.worker_id} takes tasks again`, w);
      return EXIT.ok;
    },
  },
};

export const KEYS: Group = {
  list: {
    usage: '',
    summary: 'API keys (never their secrets)',
    async run(cli) {
      const keys = await cli.client.call<ApiKey[]>({
        method: 'GET',
        path: '/v1/api-keys',
        resend: 'any',
      });
      cli.table(keys, [
        ['id', (k) => k.key_id],
        ['name', (k) => k.name],
        ['role', (k) => k.role],
        ['tenant', (k) => k.tenant],
        ['prefix', (k) => k.prefix],
        ['expires', (k) => k.expires_at],
        ['revoked', (k) => k.revoked_at],
        ['last used', (k) => k.last_used_at],
      ]);
      return EXIT.ok;
    },
  },
  create: {
    usage: '--name N --role viewer|operator|admin [--tenant T] [--expires-at 2027-01-01T00:00:00Z]',
    summary: 'make a key: its secret is printed this once (to standard output, alone)',
    options: {
      name: { type: 'string' },
      role: { type: 'string' },
      tenant: { type: 'string' },
      'expires-at': { type: 'string' },
    },
    async run(cli, _args, v) {
      if (v.name === undefined || v.role === undefined)
        throw new UsageProblem('create needs --name and --role');
      const made = await cli.client.call<ApiKey>({
        method: 'POST',
        path: '/v1/api-keys',
        body: {
          name: v.name,
          role: v.role,
          ...(v.tenant !== undefined ? { tenant: v.tenant } : {}),
          ...(v['expires-at'] !== undefined ? { expires_at: v['expires-at'] } : {}),
        },
        resend: 'unsent',
      });
      if (cli.json) cli.print(made);
      else {
        cli.err(
          `key ${made.key_id} (${made.name}, ${made.role}${made.tenant ? `, tenant ${made.tenant}` : ''}): its secret is shown this once\n`,
        );
        cli.out(`${made.key}\n`);
      }
      return EXIT.ok;
    },
  },
  revoke: {
    usage: '<key-id>',
    summary: 'revoke a key: refused from the next request on',
    args: 1,
    async run(cli, [id]) {
      await cli.client.call({
        method: 'DELETE',
        path: `/v1/api-keys/${encodeURIComponent(id)}`,
        resend: 'any',
      });
      cli.say(`key ${id} revoked`);
      return EXIT.ok;
    },
  },
};
