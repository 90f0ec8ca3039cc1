/** The `baton` command line: groups of commands, help, and the exit status (bin/baton.ts runs it). */
import { SchedulerClient } from '@baton/scheduler-client';
import { Clock, systemClock } from '@baton/time';
import { KEYS, TIMERS, WORKERS } from './admin';
import {
  Cli,
  EXIT,
  Group,
  Target,
  UsageProblem,
  failure,
  parseCommand,
  profileFile,
  resolveTarget,
} from './cli';
import { TASKS } from './tasks';
import { TOPOLOGIES } from './topologies';

export const GROUPS: Record<string, Group> = {
  tasks: TASKS,
  topologies: TOPOLOGIES,
  timers: TIMERS,
  workers: WORKERS,
  keys: KEYS,
};

/** The help: every command with its arguments, then where the scheduler and key come from. */
export function usage(env: NodeJS.ProcessEnv = process.env): string {
  const lines = ['usage: baton <group> <command> [arguments] [options]', ''];
  for (const [group, commands] of Object.entries(GROUPS)) {
    for (const [verb, c] of Object.entries(commands))
      lines.push(`  baton ${group} ${verb} ${c.usage}`.trimEnd(), `      ${c.summary}`);
    lines.push('');
  }
  lines.push(
    'options of every command:',
    '  --url <url[,url...]>  the scheduler (several: tried in turn)   BATON_URL',
    '  --key <api key>       sent as Authorization: Bearer <key>     BATON_KEY',
    `  --profile <name>      a profile of ${profileFile(env)} (BATON_CONFIG; BATON_PROFILE)`,
    "  --json                the API's answer as JSON, for scripts",
    '',
    'exit status: 0 done; 1 refused by the API (4xx); 2 bad usage or file; 3 no scheduler answered',
    '(unreachable, timed out, 5xx); 4 what was waited for ended without success',
  );
  return lines.join('\n');
}

/** Where output goes: the process's streams, or a test's buffers. */
export interface Io {
  out(text: string): void;
  err(text: string): void;
}

const PROCESS_IO: Io = {
  out: (t) => void process.stdout.write(t),
  err: (t) => void process.stderr.write(t),
};

/** Runs one command line; resolves to its exit status (never throws). */
export async function runCli(
  argv: string[],
  env: NodeJS.ProcessEnv = process.env,
  io: Io = PROCESS_IO,
  clock: Clock = systemClock,
): Promise<number> {
  let target: Target | undefined;
  const [group, verb, ...rest] = argv;
  const help = usage(env);
  try {
    if (group === undefined || group === '--help' || group === '-h' || group === 'help') {
      io.out(`${help}\n`);
      return group === undefined ? EXIT.usage : EXIT.ok;
    }
    const commands = GROUPS[group];
    if (!commands)
      throw new UsageProblem(`unknown group "${group}": ${Object.keys(GROUPS).join(', ')}`);
    const command = verb === undefined ? undefined : commands[verb];
    if (!command || verb === undefined || !Object.hasOwn(commands, verb)) {
      const known = Object.keys(commands).join(', ');
      throw new UsageProblem(
        verb === undefined
          ? `${group} needs a command: ${known}`
          : `unknown command "${group} ${verb}": ${known}`,
      );
    }
    const { args, values } = parseCommand(`${group} ${verb}`, command, rest);
    if (values.help) {
      io.out(`baton ${group} ${verb} ${command.usage}\n    ${command.summary}\n`);
      return EXIT.ok;
    }
    target = resolveTarget(values, env);
    // A command line waits less than a service would: three tries over the instances given.
    const client = new SchedulerClient({
      urls: target.urls,
      apiKey: target.key,
      timeoutMs: 30_000,
      maxTries: 3,
      clock,
    });
    const cli = new Cli(client, clock, values.json === true, io.out, io.err);
    return await command.run(cli, args, values);
  } catch (err) {
    const { code, message } = failure(err, target);
    io.err(`baton: ${message}\n`);
    if (
      code === EXIT.usage &&
      !(
        err instanceof Error &&
        /cannot be read|not JSON|not YAML|holds one|profile/.test(err.message)
      )
    )
      io.err(`(baton --help lists the commands)\n`);
    return code;
  }
}
