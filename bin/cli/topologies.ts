/**
 * `baton topologies ...`: definitions kept as files (apply, export, list) and their runs (run,
 * watch, runs). `npm run topology -- ...` is the same group.
 */
import { writeFileSync } from 'node:fs';
import { BatonApiError, SchedulerClient } from '@baton/scheduler-client';
import {
  Definition,
  FileProblem,
  definitionBody,
  filesOf,
  formatDefinitions,
  inSaveOrder,
  readDefinitions,
  readObject,
} from '../topology-files';
import { Cli, EXIT, Group, UsageProblem } from './cli';
import { seconds } from './tasks';

interface Stored extends Record<string, unknown> {
  name: string;
  version: number;
}

interface RunNode {
  key: string;
  kind: string;
  status: string;
  task_id: string | null;
  attempt: number | null;
  error: string | null;
}

interface Run {
  run_id: string;
  name: string;
  version: number;
  status: string;
  outcome: string | null;
  error: string | null;
  created_at: string;
  finished_at: string | null;
  nodes?: RunNode[];
}

async function newest(client: SchedulerClient, name: string): Promise<Stored | undefined> {
  try {
    return await client.call<Stored>({
      method: 'GET',
      path: `/v1/topologies/${encodeURIComponent(name)}`,
      resend: 'any',
    });
  } catch (err) {
    if (err instanceof BatonApiError && err.httpStatus === 404) return undefined;
    throw err;
  }
}

/** Saves (or checks) every definition of the files, in an order that defines sub-topologies first. */
async function apply(cli: Cli, paths: string[], dryRun: boolean): Promise<number> {
  if (paths.length === 0) throw new UsageProblem('apply needs -f <file|folder>');
  const defs: Definition[] = [];
  for (const path of paths) for (const file of filesOf(path)) defs.push(...readDefinitions(file));
  if (defs.length === 0) throw new FileProblem(`no definitions in ${paths.join(', ')}`);
  const ordered = inSaveOrder(defs);
  for (const [i, def] of ordered.entries()) {
    try {
      if (dryRun) {
        await cli.client.call({
          method: 'POST',
          path: '/v1/topologies/check',
          body: def,
          resend: 'any',
        });
        cli.say(`${def.name}: valid`);
        continue;
      }
      const before = await newest(cli.client, def.name);
      // Saving the same body again stores nothing: a retried save is safe.
      const saved = await cli.client.call<Stored>({
        method: 'POST',
        path: '/v1/topologies',
        body: def,
        resend: 'any',
      });
      const changed = before === undefined || saved.version !== before.version;
      cli.say(`${def.name}: version ${saved.version}${changed ? '' : ' (unchanged)'}`);
    } catch (err) {
      if (!(err instanceof BatonApiError) || err.httpStatus >= 500) throw err;
      cli.err(`${def.name}: refused (${err.httpStatus}): ${err.message}\n`);
      const left = ordered.slice(i + 1).map((d) => d.name);
      if (left.length > 0) cli.err(`stopped: not applied: ${left.join(', ')}\n`);
      return EXIT.refused;
    }
  }
  return EXIT.ok;
}

async function exportDefs(
  cli: Cli,
  names: string[],
  opts: { all: boolean; version?: string; format: string; out?: string },
): Promise<number> {
  if (opts.format !== 'yaml' && opts.format !== 'json')
    throw new UsageProblem('--format is yaml or json');
  if (opts.all === names.length > 0) throw new UsageProblem('export takes names, or --all');
  if (opts.version !== undefined && names.length !== 1)
    throw new UsageProblem('--version goes with one name');
  const version = opts.version === undefined ? undefined : Number(opts.version);
  if (version !== undefined && !(Number.isInteger(version) && version > 0))
    throw new UsageProblem('--version is a positive whole number');
  const stored = opts.all
    ? await cli.client.call<Stored[]>({ method: 'GET', path: '/v1/topologies', resend: 'any' })
    : await Promise.all(
        names.map((name) =>
          cli.client.call<Stored>({
            method: 'GET',
            path: `/v1/topologies/${encodeURIComponent(name)}`,
            query: { version },
            resend: 'any',
          }),
        ),
      );
  const text = formatDefinitions(stored.map(definitionBody), opts.format);
  if (opts.out) {
    writeFileSync(opts.out, text);
    cli.err(`wrote ${stored.length} definition(s) to ${opts.out}\n`);
  } else cli.out(text);
  return EXIT.ok;
}

/** A run's state in one line, and a line for each node that changed since `seen`. */
function report(cli: Cli, run: Run, seen: Map<string, string>): void {
  for (const n of run.nodes ?? []) {
    const state = `${n.status}${n.task_id ? ` task ${n.task_id}` : ''}${n.error ? `: ${n.error}` : ''}`;
    if (seen.get(n.key) === state) continue;
    seen.set(n.key, state);
    cli.say(`  ${n.key} (${n.kind}) ${state}`);
  }
}

/** Polls a run every second until it finishes: exit 0 on SUCCESS, 4 on any other outcome. */
async function watch(cli: Cli, runId: string, timeout: string | undefined): Promise<number> {
  const until = cli.clock.monotonic() + seconds(timeout ?? '86400', '--timeout') * 1000;
  const seen = new Map<string, string>();
  let last = '';
  for (;;) {
    const run = await cli.client.call<Run>({
      method: 'GET',
      path: `/v1/topology-runs/${encodeURIComponent(runId)}`,
      resend: 'any',
    });
    const line = `run ${run.run_id} (${run.name} v${run.version}) ${run.status}${run.outcome ? ` ${run.outcome}` : ''}`;
    if (line !== last) cli.say(line);
    last = line;
    report(cli, run, seen);
    if (run.status === 'FINISH') {
      if (cli.json) cli.print(run);
      if (run.error) cli.say(`error: ${run.error}`);
      return run.outcome === 'SUCCESS' ? EXIT.ok : EXIT.unsuccessful;
    }
    if (cli.clock.monotonic() >= until) {
      cli.err(`run ${runId} still ${run.status} after --timeout\n`);
      return EXIT.unsuccessful;
    }
    await cli.clock.sleep(1000);
  }
}

export const TOPOLOGIES: Group = {
  apply: {
    usage: '-f <file|folder> [-f ...] [--dry-run]',
    summary: 'save each definition (a new version only when it changed); --dry-run checks them',
    options: {
      file: { type: 'string', short: 'f', multiple: true },
      'dry-run': { type: 'boolean' },
    },
    run: (cli, _args, v) =>
      apply(cli, (v.file as string[] | undefined) ?? [], v['dry-run'] === true),
  },
  export: {
    usage: '<name> [<name> ...] | --all [--version N] [--format yaml|json] [-o file]',
    summary: 'the newest versions (or --version N of one) to standard output or a file',
    args: [0, 1000],
    options: {
      all: { type: 'boolean' },
      version: { type: 'string' },
      format: { type: 'string' },
      out: { type: 'string', short: 'o' },
    },
    run(cli, names, v) {
      const out = v.out as string | undefined;
      return exportDefs(cli, names, {
        all: v.all === true,
        version: v.version as string | undefined,
        format:
          (v.format as string | undefined) ??
          (out?.toLowerCase().endsWith('.json') ? 'json' : 'yaml'),
        out,
      });
    },
  },
  list: {
    usage: '',
    summary: 'the definitions, newest version of each',
    async run(cli) {
      const stored = await cli.client.call<(Stored & { nodes: unknown[]; created_at: string })[]>({
        method: 'GET',
        path: '/v1/topologies',
        resend: 'any',
      });
      cli.table(stored, [
        ['name', (s) => s.name],
        ['version', (s) => s.version],
        ['nodes', (s) => s.nodes.length],
        ['created', (s) => s.created_at],
      ]);
      return EXIT.ok;
    },
  },
  run: {
    usage:
      '<name> [--input file] [--version N] [--tenant T] [--idempotency-key K] [--watch] [--timeout S]',
    summary: 'start a run (input from a file); --watch follows it to its end',
    args: 1,
    options: {
      input: { type: 'string' },
      version: { type: 'string' },
      tenant: { type: 'string' },
      'idempotency-key': { type: 'string' },
      watch: { type: 'boolean' },
      timeout: { type: 'string' },
    },
    async run(cli, [name], v) {
      const version = v.version === undefined ? undefined : Number(v.version);
      if (version !== undefined && !(Number.isInteger(version) && version > 0))
        throw new UsageProblem('--version is a positive whole number');
      const key = v['idempotency-key'] as string | undefined;
      const run = await cli.client.call<Run>({
        method: 'POST',
        path: `/v1/topologies/${encodeURIComponent(name)}/runs`,
        body: {
          ...(v.input !== undefined ? { input: readObject(v.input as string) } : {}),
          ...(version !== undefined ? { version } : {}),
          ...(v.tenant !== undefined ? { tenant: v.tenant } : {}),
        },
        headers: key ? { 'idempotency-key': key } : undefined,
        resend: key ? 'any' : 'unsent',
      });
      if (!v.watch) {
        cli.made(run.run_id, run);
        return EXIT.ok;
      }
      return watch(cli, run.run_id, v.timeout as string | undefined);
    },
  },
  watch: {
    usage: '<run-id> [--timeout S]',
    summary: 'follow a run node by node until it ends: exit 0 on SUCCESS, 4 otherwise',
    args: 1,
    options: { timeout: { type: 'string' } },
    run: (cli, [id], v) => watch(cli, id, v.timeout as string | undefined),
  },
  runs: {
    usage: '[--name N] [--status S] [--outcome O] [--limit N] [--cursor C]',
    summary: 'runs, newest first',
    options: {
      name: { type: 'string' },
      status: { type: 'string' },
      outcome: { type: 'string' },
      limit: { type: 'string' },
      cursor: { type: 'string' },
    },
    async run(cli, _args, v) {
      const page = await cli.client.call<{ items: Run[]; next_cursor?: string | null }>({
        method: 'GET',
        path: '/v1/topology-runs',
        query: {
          name: v.name as string | undefined,
          status: v.status as string | undefined,
          outcome: v.outcome as string | undefined,
          limit: v.limit as string | undefined,
          cursor: v.cursor as string | undefined,
        },
        resend: 'any',
      });
      cli.table(
        page.items,
        [
          ['run', (r) => r.run_id],
          ['name', (r) => r.name],
          ['version', (r) => r.version],
          ['status', (r) => r.status],
          ['outcome', (r) => r.outcome],
          ['created', (r) => r.created_at],
        ],
        page,
      );
      if (page.next_cursor && !cli.json) cli.err(`more: --cursor ${page.next_cursor}\n`);
      return EXIT.ok;
    },
  },
};
