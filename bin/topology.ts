/**
 * `npm run topology -- <command>`: topology definitions kept as files (in Git, deployed from CI).
 *
 *   apply -f <file|folder> [-f ...] [--dry-run]   save each definition (a new version only when it
 *                                                 changed); --dry-run checks them, saving nothing
 *   export <name> [<name> ...] | --all            the newest versions (or --version N of one name)
 *          [--format yaml|json] [-o <file>]       to stdout or a file
 *   list                                          the definitions, newest version of each
 *
 * The scheduler: --url (or BATON_URL; several, comma-separated), default http://127.0.0.1:3000.
 * The API key: --key (or BATON_KEY). Exit status: 0 done, 1 refused or failed, 2 bad usage.
 */
import { writeFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { BatonApiError, SchedulerClient } from '@baton/scheduler-client';
import {
  Definition,
  FileProblem,
  definitionBody,
  filesOf,
  formatDefinitions,
  inSaveOrder,
  readDefinitions,
} from './topology-files';

const USAGE = `usage: npm run topology -- apply -f <file|folder> [-f ...] [--dry-run]
       npm run topology -- export <name> [<name> ...] | --all [--version N] [--format yaml|json] [-o file]
       npm run topology -- list
options: --url <scheduler url[,url...]> (BATON_URL)  --key <api key> (BATON_KEY)`;

class UsageProblem extends Error {}

interface Stored extends Record<string, unknown> {
  name: string;
  version: number;
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
async function apply(client: SchedulerClient, paths: string[], dryRun: boolean): Promise<number> {
  if (paths.length === 0) throw new UsageProblem('apply needs -f <file|folder>');
  const defs: Definition[] = [];
  for (const path of paths) for (const file of filesOf(path)) defs.push(...readDefinitions(file));
  if (defs.length === 0) throw new FileProblem(`no definitions in ${paths.join(', ')}`);
  const ordered = inSaveOrder(defs);
  for (const [i, def] of ordered.entries()) {
    try {
      if (dryRun) {
        await client.call({
          method: 'POST',
          path: '/v1/topologies/check',
          body: def,
          resend: 'any',
        });
        console.log(`${def.name}: valid`);
        continue;
      }
      const before = await newest(client, def.name);
      // Saving the same body again stores nothing: a retried save is safe.
      const saved = await client.call<Stored>({
        method: 'POST',
        path: '/v1/topologies',
        body: def,
        resend: 'any',
      });
      const changed = before === undefined || saved.version !== before.version;
      console.log(`${def.name}: version ${saved.version}${changed ? '' : ' (unchanged)'}`);
    } catch (err) {
      if (!(err instanceof BatonApiError)) throw err;
      console.error(`${def.name}: refused (${err.httpStatus}): ${err.message}`);
      const left = ordered.slice(i + 1).map((d) => d.name);
      if (left.length > 0) console.error(`stopped: not applied: ${left.join(', ')}`);
      return 1;
    }
  }
  return 0;
}

async function exportDefs(
  client: SchedulerClient,
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
    ? await client.call<Stored[]>({ method: 'GET', path: '/v1/topologies', resend: 'any' })
    : await Promise.all(
        names.map((name) =>
          client.call<Stored>({
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
    console.error(`wrote ${stored.length} definition(s) to ${opts.out}`);
  } else process.stdout.write(text);
  return 0;
}

async function list(client: SchedulerClient): Promise<number> {
  const stored = await client.call<(Stored & { nodes: unknown[]; created_at: string })[]>({
    method: 'GET',
    path: '/v1/topologies',
    resend: 'any',
  });
  for (const s of stored)
    console.log(`${s.name}\tversion ${s.version}\t${s.nodes.length} nodes\t${s.created_at}`);
  return 0;
}

async function main(argv: string[]): Promise<number> {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      file: { type: 'string', short: 'f', multiple: true },
      'dry-run': { type: 'boolean' },
      all: { type: 'boolean' },
      version: { type: 'string' },
      format: { type: 'string' },
      out: { type: 'string', short: 'o' },
      url: { type: 'string' },
      key: { type: 'string' },
      help: { type: 'boolean', short: 'h' },
    },
  });
  const [command, ...rest] = positionals;
  if (values.help || command === undefined) {
    console.log(USAGE);
    return values.help ? 0 : 2;
  }
  const urls = (values.url ?? process.env.BATON_URL ?? 'http://127.0.0.1:3000')
    .split(',')
    .map((u) => u.trim().replace(/\/+$/, ''))
    .filter(Boolean);
  const client = new SchedulerClient({ urls, apiKey: values.key ?? process.env.BATON_KEY });
  switch (command) {
    case 'apply':
      if (rest.length > 0) throw new UsageProblem(`apply takes files with -f, not ${rest[0]}`);
      return apply(client, values.file ?? [], values['dry-run'] ?? false);
    case 'export': {
      const fromOut = values.out?.toLowerCase().endsWith('.json') ? 'json' : 'yaml';
      return exportDefs(client, rest, {
        all: values.all ?? false,
        version: values.version,
        format: values.format ?? fromOut,
        out: values.out,
      });
    }
    case 'list':
      return list(client);
    default:
      throw new UsageProblem(`unknown command ${command}`);
  }
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (err: unknown) => {
    if (
      err instanceof UsageProblem ||
      (err as { code?: string }).code?.startsWith('ERR_PARSE_ARGS')
    ) {
      console.error(`${(err as Error).message}\n${USAGE}`);
      process.exit(2);
    }
    if (err instanceof FileProblem || err instanceof BatonApiError) {
      console.error((err as Error).message);
      process.exit(1);
    }
    console.error(err);
    process.exit(1);
  },
);
