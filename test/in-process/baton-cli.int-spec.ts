import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runCli } from '../../bin/cli/main';
import { ADMIN_KEY } from '../support/baton';
import { InProcessBaton, startInProcess } from '../support/in-process';
import { Waits, manualTime } from '../support/waits';

/** What one command line printed, and its exit status. */
interface Ran {
  code: number;
  out: string;
  err: string;
}

/**
 * The `baton` command line against a scheduler and a template worker in this process, on a
 * ManualClock (its waits and polls too): every group, the table and JSON output, profiles, and
 * the exit statuses scripts rely on.
 */
describe('baton command line', () => {
  let baton: InProcessBaton;
  let waits: Waits;
  let dir: string;
  let env: NodeJS.ProcessEnv;

  beforeAll(async () => {
    baton = await startInProcess();
    waits = manualTime(baton.clock);
    await baton.addWorker('cli-w1');
    dir = mkdtempSync(join(tmpdir(), 'baton-cli-'));
    // No profile file of the machine's user is read.
    env = { BATON_URL: baton.api.base, BATON_KEY: ADMIN_KEY, BATON_CONFIG: join(dir, 'none.json') };
  });

  afterAll(async () => {
    await baton?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  /** Runs a command line to its end, moving the clock while it waits or polls. */
  const run = async (argv: string[], over: NodeJS.ProcessEnv = {}): Promise<Ran> => {
    const ran = { code: -1, out: '', err: '' };
    let done = false;
    void runCli(
      argv,
      { ...env, ...over },
      { out: (t) => void (ran.out += t), err: (t) => void (ran.err += t) },
      baton.clock,
    ).then((code) => {
      ran.code = code;
      done = true;
    });
    await waits.eventually(
      async () => (done ? true : undefined),
      600_000,
      `baton ${argv.join(' ')}`,
    );
    return ran;
  };
  const file = (name: string, text: string): string => {
    const path = join(dir, name);
    writeFileSync(path, text);
    return path;
  };
  const finished = (id: string) =>
    waits.eventually(
      async () => {
        const t = await baton.api.task(id);
        return t.task_status === 'FINISH' ? t : undefined;
      },
      120_000,
      `task ${id} finished`,
    );

  it('says how it is used: help is exit 0, a wrong command line exit 2 with what is wrong', async () => {
    const help = await run(['--help']);
    expect(help.code).toBe(0);
    expect(help.out).toContain('baton tasks logs <task-id>');
    expect(help.out).toMatch(/exit status: 0 done; 1 refused by the API/);
    expect((await run([])).code).toBe(2);
    const wrong: [string[], RegExp][] = [
      [['jobs', 'list'], /unknown group "jobs"/],
      [['tasks'], /tasks needs a command: list, get, create/],
      [['tasks', 'explode'], /unknown command "tasks explode"/],
      [['tasks', 'get'], /tasks get takes 1 argument\(s\), not 0/],
      [['tasks', 'list', '--colour'], /Unknown option '--colour'/],
      // An option of another command is not taken silently.
      [['tasks', 'list', '--follow'], /Unknown option '--follow'/],
      [['tasks', 'create'], /create needs -f <file>/],
      [
        ['tasks', 'create', '-f', join(dir, 'missing.json')],
        /missing\.json: cannot be read \(ENOENT\)/,
      ],
      [['tasks', 'create', '-f', file('bad.json', '{"create_info": ')], /bad\.json: not JSON/],
      [['workers', 'blacklist', 'w'], /blacklist needs --reason/],
      [['tasks', 'list', '--url', 'ftp://x'], /ftp:\/\/x \(from --url\) is not an http\(s\) URL/],
    ];
    for (const [argv, message] of wrong) {
      const r = await run(argv);
      expect([argv, r.code, r.out]).toEqual([argv, 2, '']);
      expect(r.err).toMatch(message);
    }
  });

  it('creates a task from a file, shows it as fields, a table row or JSON, with its events and its logs', async () => {
    const created = await run([
      'tasks',
      'create',
      '-f',
      file(
        'echo.yaml',
        'create_info:\n  task_type: demo.echo\n  task_name: cli echo\nparams:\n  log_lines: 3\n',
      ),
    ]);
    expect(created.code).toBe(0);
    const id = created.out.trim();
    expect(id).toMatch(/^[A-Za-z0-9_-]+$/);
    await finished(id);

    const got = await run(['tasks', 'get', id]);
    expect(got.code).toBe(0);
    expect(got.out).toMatch(new RegExp(`^task_id: +${id}$`, 'm'));
    expect(got.out).toMatch(/^task_status: +FINISH$/m);
    expect(got.out).toMatch(/^outcome: +SUCCESS$/m);
    const json = JSON.parse((await run(['tasks', 'get', id, '--json'])).out) as Record<
      string,
      unknown
    >;
    expect(json).toMatchObject({ task_id: id, task_name: 'cli echo', outcome: 'SUCCESS' });

    const list = await run(['tasks', 'list', '--type', 'demo.echo', '--outcome', 'SUCCESS']);
    const [header, ...rows] = list.out.trimEnd().split('\n');
    expect(header.split(/\s{2,}/)).toEqual([
      'ID',
      'TYPE',
      'NAME',
      'STATUS',
      'OUTCOME',
      'ATTEMPT',
      'CREATED',
    ]);
    expect(
      rows
        .find((r) => r.startsWith(id))
        ?.split(/\s{2,}/)
        .slice(0, 6),
    ).toEqual([id, 'demo.echo', 'cli echo', 'FINISH', 'SUCCESS', '1']);
    const page = JSON.parse(
      (await run(['tasks', 'list', '--type', 'demo.echo', '--json'])).out,
    ) as {
      items: { task_id: string }[];
    };
    expect(page.items.map((t) => t.task_id)).toContain(id);

    const events = await run(['tasks', 'events', id]);
    expect(events.out).toMatch(/RUNNING +SUCCESS/);
    const logs = await waits.eventually(
      async () => {
        const r = await run(['tasks', 'logs', id]);
        return r.out.includes('echo line 3 of 3') ? r : undefined;
      },
      60_000,
      'the three lines shipped',
    );
    expect(
      logs.out
        .trimEnd()
        .split('\n')
        .map((l) => l.replace(/^\S+ /, '')),
    ).toEqual([
      'INFO  echo line 1 of 3 {"line":1}',
      'INFO  echo line 2 of 3 {"line":2}',
      'INFO  echo line 3 of 3 {"line":3}',
    ]);
  });

  it('waits: --wait and wait exit 0 on success and 4 on failure; logs --follow ends with the attempt', async () => {
    const ok = await run([
      'tasks',
      'create',
      '--wait',
      '-f',
      file(
        'sleep.json',
        JSON.stringify({
          create_info: { task_type: 'demo.sleep', task_name: 'cli sleep' },
          params: { seconds: 3, tick_ms: 1000 },
        }),
      ),
    ]);
    expect(ok.code).toBe(0);
    expect(ok.out).toMatch(/^outcome: +SUCCESS$/m);

    const failing = await run([
      'tasks',
      'create',
      '-f',
      file(
        'flaky.json',
        JSON.stringify({
          create_info: { task_type: 'demo.flaky', task_name: 'cli flaky' },
          params: { fail_times: 5 },
          process_arg: { max_retry: 0 },
        }),
      ),
    ]);
    const waited = await run(['tasks', 'wait', failing.out.trim()]);
    expect(waited.code).toBe(4);
    expect(waited.out).toMatch(/^outcome: +FAIL$/m);

    // Follow from the start of a run of 4 ticks of 1 s: every line, then the end.
    const long = (
      await run([
        'tasks',
        'create',
        '-f',
        file(
          'long.json',
          JSON.stringify({
            create_info: { task_type: 'demo.sleep', task_name: 'cli long' },
            params: { seconds: 4, tick_ms: 1000 },
          }),
        ),
      ])
    ).out.trim();
    await waits.eventually(
      async () => ((await baton.api.task(long)).attempt === 1 ? true : undefined),
      60_000,
      'started',
    );
    const followed = await run(['tasks', 'logs', long, '--follow']);
    expect(followed.code).toBe(0);
    expect(followed.out).toContain('sleeping 4 s in ticks of 1000 ms');
    expect(followed.out).toContain('done: slept 4000 ms in 4 tick(s)');
    expect((await baton.api.task(long)).task_status).toBe('FINISH');
  });

  it('exit 1 when the API refuses (with its code), 3 when no scheduler answers', async () => {
    const missing = await run(['tasks', 'get', 'no-such-task']);
    expect(missing.code).toBe(1);
    expect(missing.err).toMatch(/^baton: refused \(404 \d+\): /);
    const down = await run(['tasks', 'list', '--url', 'http://127.0.0.1:9']);
    expect(down.code).toBe(3);
    expect(down.err).toMatch(/127\.0\.0\.1:9.*\(scheduler from --url: http:\/\/127\.0\.0\.1:9\)/);
  });

  it('makes, lists and revokes keys; a viewer key reads and is refused an action', async () => {
    const made = await run(['keys', 'create', '--name', 'cli-viewer', '--role', 'viewer']);
    expect(made.code).toBe(0);
    const secret = made.out.trim();
    expect(made.err).toMatch(/its secret is shown this once/);
    expect(secret.split('\n')).toHaveLength(1);
    const asViewer = { BATON_KEY: secret };
    expect((await run(['tasks', 'list', '--limit', '1'], asViewer)).code).toBe(0);
    const someTask = await baton.api.create({
      create_info: { task_type: 'demo.sleep', task_name: 'runs long' },
      params: { seconds: 600 },
    });
    const refused = await run(['tasks', 'cancel', someTask], asViewer);
    expect([refused.code, refused.err]).toEqual([1, expect.stringMatching(/refused \(403/)]);

    const keys = JSON.parse((await run(['keys', 'list', '--json'])).out) as {
      key_id: string;
      name: string;
    }[];
    const keyId = keys.find((k) => k.name === 'cli-viewer')?.key_id;
    expect((await run(['keys', 'list'])).out).toMatch(/cli-viewer +viewer/);
    expect((await run(['keys', 'revoke', keyId!])).code).toBe(0);
    const revoked = await run(['tasks', 'list'], asViewer);
    expect([revoked.code, revoked.err]).toEqual([1, expect.stringMatching(/refused \(401/)]);
  });

  it('drains, blacklists and lifts a worker', async () => {
    expect((await run(['workers', 'list'])).out).toMatch(/^cli-w1 +\S+ +\d+\/\d+ +no /m);
    expect((await run(['workers', 'drain', 'cli-w1'])).out).toBe('worker cli-w1 draining\n');
    expect((await run(['workers', 'list'])).out).toMatch(/^cli-w1 +\S+ +\d+\/\d+ +yes /m);
    expect((await run(['workers', 'drain', 'cli-w1', '--undo'])).out).toBe(
      'worker cli-w1 takes new tasks again\n',
    );
    const until = new Date(baton.clock.now() + 3_600_000).toISOString();
    const black = await run([
      'workers',
      'blacklist',
      'cli-w1',
      '--reason',
      'disk full',
      '--until',
      until,
    ]);
    expect(black.out).toMatch(/^worker cli-w1 blacklisted until /);
    expect((await run(['workers', 'unblacklist', 'cli-w1'])).out).toBe(
      'worker cli-w1 takes tasks again\n',
    );
    const missing = await run(['workers', 'drain', 'no-such-worker']);
    expect(missing.code).toBe(1);
  });

  it('defines, lists, stops and deletes a timer', async () => {
    const made = await run([
      'timers',
      'create',
      '-f',
      file(
        'timer.yaml',
        'name: cli nightly\nschedule:\n  kind: cron\n  cron: "0 0 3 * * *"\n  time_zone: Europe/Berlin\ntask:\n  create_info:\n    task_type: demo.echo\n    task_name: nightly echo\n',
      ),
    ]);
    expect(made.code).toBe(0);
    const id = made.out.trim();
    expect((await run(['timers', 'list'])).out).toMatch(
      new RegExp(`^${id} +cli nightly +cron 0 0 3 \\* \\* \\* \\(Europe/Berlin\\) +yes `, 'm'),
    );
    expect((await run(['timers', 'disable', id])).out).toBe(`timer ${id} disabled\n`);
    expect(JSON.parse((await run(['timers', 'get', id, '--json'])).out)).toMatchObject({
      timer_id: id,
      enabled: false,
    });
    expect((await run(['timers', 'delete', id])).code).toBe(0);
    expect((await run(['timers', 'get', id])).code).toBe(1);
  });

  it('applies a topology, runs it and watches it node by node to its end', async () => {
    const def = file(
      'chain.yaml',
      'name: cli-chain\nnodes:\n  - key: first\n    task: { create_info: { task_type: demo.echo } }\n  - key: second\n    depends_on: [first]\n    task: { create_info: { task_type: demo.echo } }\n',
    );
    expect((await run(['topologies', 'apply', '-f', def])).out).toBe('cli-chain: version 1\n');
    const watched = await run(['topologies', 'run', 'cli-chain', '--watch']);
    expect(watched.code).toBe(0);
    expect(watched.out).toMatch(/^run \S+ \(cli-chain v1\) FINISH SUCCESS$/m);
    expect(watched.out).toMatch(/^ {2}first \(task\) SUCCESS task \S+$/m);
    expect(watched.out).toMatch(/^ {2}second \(task\) SUCCESS task \S+$/m);
    expect((await run(['topologies', 'runs', '--name', 'cli-chain'])).out).toMatch(
      /cli-chain +1 +FINISH +SUCCESS/,
    );
  });

  it('reads the URL and key from a profile, and refuses a profile file others can read', async () => {
    const config = join(dir, 'config.json');
    writeFileSync(
      config,
      JSON.stringify({
        default: 'here',
        profiles: { here: { url: baton.api.base, key: ADMIN_KEY } },
      }),
    );
    chmodSync(config, 0o644);
    const bare = { BATON_URL: undefined, BATON_KEY: undefined, BATON_CONFIG: config };
    const open = await run(['workers', 'list'], bare);
    expect([open.code, open.err]).toEqual([2, expect.stringContaining(`chmod 600 ${config}`)]);
    chmodSync(config, 0o600);
    expect((await run(['workers', 'list'], bare)).out).toMatch(/^cli-w1 /m);
    const other = await run(['workers', 'list', '--profile', 'prod'], bare);
    expect([other.code, other.err]).toEqual([2, expect.stringContaining('has no profile "prod"')]);
  });
});
