/**
 * The frame of the `baton` command line: how a command is declared, how its options are read
 * (strictly: an option the command does not take is refused), where the scheduler's address and
 * key come from, how answers are printed (a table, or the API's JSON with --json), and what the
 * exit status says.
 */
import { existsSync, readFileSync, statSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { ParseArgsConfig, parseArgs } from 'node:util';
import { BatonApiError, BatonUnavailableError, SchedulerClient } from '@baton/scheduler-client';
import { Clock } from '@baton/time';
import { FileProblem } from '../topology-files';

/** Exit statuses, for scripts (README and `baton --help` say the same). */
export const EXIT = {
  ok: 0,
  /** The API refused: invalid input, not found, not allowed, a conflict (a 4xx answer). */
  refused: 1,
  /** The command line itself is wrong: unknown command or option, a missing argument, a bad file. */
  usage: 2,
  /** No scheduler answered (unreachable, timed out, or 5xx after the client's retries). */
  unavailable: 3,
  /** What was waited for ended, but not in success (a task or run that failed or was cancelled). */
  unsuccessful: 4,
} as const;

/** A problem with the command line or its files: exit 2 with the message and the usage. */
export class UsageProblem extends Error {}

type OptionSpec = NonNullable<ParseArgsConfig['options']>[string];
export type Options = Record<string, OptionSpec>;
export type Values = Record<string, string | boolean | string[] | undefined>;

/** One command: `baton <group> <verb> ...`. */
export interface Command {
  /** Arguments and options, as the help shows them: "<task-id> [--attempt N] [--follow]". */
  usage: string;
  summary: string;
  options?: Options;
  /** How many positional arguments it takes: exactly n, or [min, max]. */
  args?: number | [number, number];
  run(cli: Cli, args: string[], values: Values): Promise<number>;
}

export type Group = Record<string, Command>;

/** Options every command takes. */
export const GLOBAL_OPTIONS: Options = {
  url: { type: 'string' },
  key: { type: 'string' },
  profile: { type: 'string' },
  json: { type: 'boolean' },
  help: { type: 'boolean', short: 'h' },
};

/** Where the scheduler is and the key to use, as resolved. */
export interface Target {
  urls: string[];
  key?: string;
  /** Where it came from, for error messages: "--url", "BATON_URL", "profile prod". */
  from: string;
}

/**
 * The profile file: `BATON_CONFIG`, or `~/.config/baton/config.json`:
 * `{"default": "prod", "profiles": {"prod": {"url": "https://...", "key": "..."}}}`.
 */
export function profileFile(env: NodeJS.ProcessEnv): string {
  return env.BATON_CONFIG ?? join(env.HOME ?? homedir(), '.config', 'baton', 'config.json');
}

interface ProfileFile {
  default?: string;
  profiles?: Record<string, { url?: string; key?: string }>;
}

/**
 * Resolves the scheduler's URL(s) and the API key: --url/--key, then BATON_URL/BATON_KEY, then
 * the profile (--profile, BATON_PROFILE, or the file's default), then http://127.0.0.1:3000.
 * A profile file that holds keys and is readable by others is refused, as ssh refuses such a key.
 */
export function resolveTarget(values: Values, env: NodeJS.ProcessEnv): Target {
  const file = profileFile(env);
  const wanted = (values.profile as string | undefined) ?? env.BATON_PROFILE;
  let profile: { url?: string; key?: string } = {};
  let profileName: string | undefined;
  if (existsSync(file)) {
    let parsed: ProfileFile;
    try {
      parsed = JSON.parse(readFileSync(file, 'utf8')) as ProfileFile;
    } catch (err) {
      throw new UsageProblem(`${file} is not valid JSON: ${(err as Error).message}`);
    }
    profileName = wanted ?? parsed.default;
    if (profileName !== undefined) {
      const found = parsed.profiles?.[profileName];
      if (!found) throw new UsageProblem(`${file} has no profile "${profileName}"`);
      profile = found;
      if (profile.key && process.platform !== 'win32' && (statSync(file).mode & 0o077) !== 0)
        throw new UsageProblem(
          `${file} holds an API key and others may read it: chmod 600 ${file}`,
        );
    }
  } else if (wanted !== undefined) {
    throw new UsageProblem(`no profile file at ${file} (BATON_CONFIG), so no profile "${wanted}"`);
  }
  const url = (values.url as string | undefined) ?? env.BATON_URL ?? profile.url;
  const from =
    values.url !== undefined
      ? '--url'
      : env.BATON_URL !== undefined
        ? 'BATON_URL'
        : profile.url !== undefined
          ? `profile ${profileName}`
          : 'the default';
  const urls = (url ?? 'http://127.0.0.1:3000')
    .split(',')
    .map((u) => u.trim().replace(/\/+$/, ''))
    .filter(Boolean);
  for (const u of urls)
    if (!/^https?:\/\/[^/]+/.test(u))
      throw new UsageProblem(`${u} (from ${from}) is not an http(s) URL`);
  if (urls.length === 0) throw new UsageProblem(`no scheduler URL in ${from}`);
  const key = (values.key as string | undefined) ?? env.BATON_KEY ?? profile.key;
  return { urls, key, from };
}

/** A column of a table: its heading and how a row shows in it. */
export type Column<T> = [heading: string, cell: (row: T) => unknown];

/** What a command prints to, and the client it calls with. */
export class Cli {
  constructor(
    readonly client: SchedulerClient,
    /** What waits and polls run on (a test's ManualClock, or the process's). */
    readonly clock: Clock,
    readonly json: boolean,
    readonly out: (text: string) => void = (t) => void process.stdout.write(t),
    readonly err: (text: string) => void = (t) => void process.stderr.write(t),
  ) {}

  /** Rows as an aligned table, or `raw` (the API's answer) as JSON with --json. */
  table<T>(rows: readonly T[], columns: Column<T>[], raw: unknown = rows): void {
    if (this.json) return this.print(raw);
    const cells = rows.map((r) => columns.map(([, cell]) => text(cell(r))));
    const widths = columns.map(([h], i) => Math.max(h.length, ...cells.map((c) => c[i].length)));
    const line = (cs: string[]): string =>
      cs
        .map((c, i) => (i === cs.length - 1 ? c : c.padEnd(widths[i])))
        .join('  ')
        .trimEnd() + '\n';
    this.out(line(columns.map(([h]) => h.toUpperCase())));
    for (const c of cells) this.out(line(c));
    if (rows.length === 0) this.err('(none)\n');
  }

  /** One object: its fields, one per line (JSON with --json). */
  record(fields: [string, unknown][], raw: unknown): void {
    if (this.json) return this.print(raw);
    const width = Math.max(...fields.map(([k]) => k.length));
    for (const [k, v] of fields)
      if (v !== undefined) this.out(`${`${k}:`.padEnd(width + 2)}${text(v)}\n`);
  }

  /** What an action did: a line for people, and with --json the object the API answered. */
  done(line: string, value: unknown): void {
    this.say(line);
    if (this.json) this.print(value);
  }

  /** A new thing's id alone on standard output (for `$(baton ...)`), or with --json the object. */
  made(id: string, value: unknown): void {
    if (this.json) this.print(value);
    else this.out(`${id}\n`);
  }

  print(value: unknown): void {
    this.out(`${JSON.stringify(value, null, 2)}\n`);
  }

  /** A line for people (stdout without --json, stderr with it, so JSON stays parseable). */
  say(line: string): void {
    (this.json ? this.err : this.out)(`${line}\n`);
  }
}

/** A cell's text: null and undefined as "-", objects as compact JSON. */
export function text(v: unknown): string {
  if (v === null || v === undefined || v === '') return '-';
  if (typeof v === 'object') return JSON.stringify(v);
  return String(v);
}

/** The exit status and message for an error a command threw. */
export function failure(err: unknown, target?: Target): { code: number; message: string } {
  if (err instanceof UsageProblem || err instanceof FileProblem)
    return { code: EXIT.usage, message: err.message };
  const code = (err as { code?: unknown } | null)?.code;
  if (typeof code === 'string' && code.startsWith('ERR_PARSE_ARGS'))
    return { code: EXIT.usage, message: (err as Error).message };
  if (
    err instanceof BatonUnavailableError ||
    (err instanceof BatonApiError && err.httpStatus >= 500)
  )
    return {
      code: EXIT.unavailable,
      message: `${err.message}${target ? ` (scheduler from ${target.from}: ${target.urls.join(', ')})` : ''}`,
    };
  if (err instanceof BatonApiError) {
    const data = err.data === null || err.data === undefined ? '' : `\n${JSON.stringify(err.data)}`;
    return {
      code: EXIT.refused,
      message: `refused (${err.httpStatus} ${err.code}): ${err.message}${data}`,
    };
  }
  return {
    code: EXIT.unavailable,
    message: err instanceof Error ? (err.stack ?? err.message) : String(err),
  };
}

/** Parses a command's own arguments: its options and the global ones, nothing else. */
export function parseCommand(
  name: string,
  command: Command,
  argv: string[],
): { args: string[]; values: Values } {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    strict: true,
    options: { ...GLOBAL_OPTIONS, ...(command.options ?? {}) },
  });
  const [min, max] =
    command.args === undefined
      ? [0, 0]
      : typeof command.args === 'number'
        ? [command.args, command.args]
        : command.args;
  if (!values.help && (positionals.length < min || positionals.length > max))
    throw new UsageProblem(
      `${name} takes ${min === max ? min : `${min} to ${max}`} argument(s), not ${positionals.length}: baton ${name} ${command.usage}`,
    );
  return { args: positionals, values: values as Values };
}
