import { execSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  AuthConfig,
  CHECK_NAMES,
  CheckResult,
  ConformanceKit,
  ConformanceOptions,
  formatResults,
} from '@baton/task-contract';
import {
  CONTRACT_CLI,
  PLAIN_WORKER,
  PYTHON_WORKER,
  ROOT,
  RunningProcess,
  WORKER_MAIN,
  eventually,
  freePort,
  runScript,
  startProcess,
} from './support/processes';

const SECRET = 'conformance-secret-0123456789';
const TOKEN = 'conformance-token-0123456789';

interface KitRun {
  code: number | null;
  results: CheckResult[];
  out: string;
}

type KitOptions = Omit<ConformanceOptions, 'url' | 'type' | 'auth'>;
const hmacAuth: AuthConfig = { mode: 'hmac', secret: SECRET };
const tokenAuth: AuthConfig = { mode: 'token', token: TOKEN };

/**
 * The kit run in this process, as the CLI runs it (its exit code: 1 when a check failed). One case
 * below runs the CLI itself, for its arguments and its JSON.
 */
async function kit(
  url: string,
  type: string,
  auth: AuthConfig,
  options: KitOptions = {},
): Promise<KitRun> {
  const results = await new ConformanceKit({
    url,
    type,
    auth,
    outcomeTimeoutMs: 10_000,
    ...options,
  }).run();
  return {
    code: results.some((r) => r.verdict === 'fail') ? 1 : 0,
    results,
    out: formatResults(results),
  };
}

/** The CLI, with `--json`. */
async function kitCli(args: string[]): Promise<KitRun> {
  const { code, out } = await runScript(CONTRACT_CLI, [...args, '--json', '--timeout-ms', '10000']);
  const start = out.indexOf('[');
  const results = start >= 0 ? (JSON.parse(out.slice(start)) as CheckResult[]) : [];
  return { code, results, out };
}

const failed = (run: KitRun): string[] =>
  run.results.filter((r) => r.verdict === 'fail').map((r) => `${r.name}: ${r.detail}`);

/** The checks of a running task passed (they ran: long params were given). */
function expectRunningChecks(run: KitRun): void {
  const verdicts = Object.fromEntries(run.results.map((r) => [r.name, r.verdict]));
  expect(verdicts).toMatchObject({
    'pause of a running task: PAUSE, the run stands still, continue resumes it': 'pass',
    'cancel of a running task: FAIL, and the run stops': 'pass',
    'a new attempt over a running one: the old run stops before the new attempt is held': 'pass',
  });
}

/** A run narrowed to the auth checks (`only: ['auth:']`): the happy path and those, all passed. */
function expectAuthConformant(run: KitRun): void {
  expect(failed(run)).toEqual([]);
  expect(run.code).toBe(0);
  const passed = run.results.filter((r) => r.verdict === 'pass').map((r) => r.name);
  expect(passed).toContain('create: idempotent on task_id');
  expect(passed).toContain('auth: wrong credentials refused with 401');
  expect(passed).toContain('auth: missing credentials refused with 401');
}

/** A run that passed: exit 0, nothing failed, and the checks that matter really ran. */
function expectConformant(run: KitRun): void {
  expect(failed(run)).toEqual([]);
  expect(run.code).toBe(0);
  const passed = run.results.filter((r) => r.verdict === 'pass').map((r) => r.name);
  expect(passed.length).toBeGreaterThanOrEqual(22);
  for (const must of [
    'create: idempotent on task_id',
    'fence: a lower fence is refused with 409 and changes nothing',
    'illegal transition: refused with 409 and nothing changes',
    'auth: wrong credentials refused with 401',
    'body: unknown field refused with 400',
    'unknown task type: 404',
  ]) {
    expect(passed).toContain(must);
  }
}

describe('conformance kit against the template worker', () => {
  let hmac: RunningProcess;
  let token: RunningProcess;

  beforeAll(async () => {
    [hmac, token] = await Promise.all([
      startProcess(WORKER_MAIN, {
        WORKER_PORT: '0',
        BATON_AUTH_MODE: 'hmac',
        BATON_AUTH_SECRET: SECRET,
      }),
      startProcess(WORKER_MAIN, {
        WORKER_PORT: '0',
        BATON_AUTH_MODE: 'token',
        BATON_AUTH_TOKEN: TOKEN,
      }),
    ]);
  });

  afterAll(async () => {
    await Promise.all([hmac?.stop(), token?.stop()]);
  });

  it.each<[string, KitOptions]>([
    ['demo.echo', { otherType: 'demo.sleep' }],
    [
      'demo.sleep',
      { params: { seconds: 0.3, tick_ms: 50 }, longParams: { seconds: 5, tick_ms: 50 } },
    ],
    ['demo.flaky', { params: { fail_times: 0 } }],
    ['demo.rollback', {}],
  ])('passes for %s with HMAC, including replay refusal', async (type, options) => {
    const run = await kit(hmac.url, type, hmacAuth, options);
    expectConformant(run);
    if (type === 'demo.sleep') expectRunningChecks(run);
    expect(run.results.find((r) => r.name.startsWith('auth: a replayed signature'))?.verdict).toBe(
      'pass',
    );
    // create_run is offered for the sync types without a prepare step, and only those.
    for (const check of run.results.filter((r) => r.name.startsWith('create_run')))
      expect([check.name, check.verdict]).toEqual([
        check.name,
        type === 'demo.sleep' ? 'skip' : 'pass',
      ]);
    expect(run.results.filter((r) => r.name.startsWith('create_run'))).toHaveLength(2);
  });

  it('passes with a bearer token (signature checks are skips, not passes)', async () => {
    const run = await kit(token.url, 'demo.echo', tokenAuth);
    expectConformant(run);
    expect(run.results.find((r) => r.name.startsWith('auth: a replayed signature'))?.verdict).toBe(
      'skip',
    );
  });

  it('fails when given the wrong credentials, naming the 401s', async () => {
    const run = await kit(hmac.url, 'demo.echo', { mode: 'hmac', secret: `${SECRET}-wrong` });
    expect(run.code).toBe(1);
    expect(failed(run).some((f) => f.includes('401'))).toBe(true);
  });

  it('refuses bad arguments with exit code 2', async () => {
    await expect(runScript(CONTRACT_CLI, ['--type', 'demo.echo'])).resolves.toMatchObject({
      code: 2,
    });
    await expect(
      runScript(CONTRACT_CLI, ['--url', 'not a url', '--type', 'x']),
    ).resolves.toMatchObject({ code: 2 });
    await expect(
      runScript(CONTRACT_CLI, ['--url', 'http://x', '--type', 'x', '--bogus']),
    ).resolves.toMatchObject({ code: 2 });
    // An --only that names no check: a typo would otherwise pass on the happy path alone.
    const typo = await runScript(CONTRACT_CLI, [
      '--url',
      hmac.url,
      '--type',
      'demo.echo',
      '--only',
      'no such check',
    ]);
    expect(typo).toMatchObject({ code: 2 });
    expect(typo.out).toContain('no such check');
  });

  it('runs from the command line: every check, as JSON; --only narrows it to the happy path and the named checks', async () => {
    const all = await kitCli([
      '--url',
      hmac.url,
      '--type',
      'demo.sleep',
      '--secret',
      SECRET,
      '--params',
      JSON.stringify({ seconds: 0.3, tick_ms: 50 }),
      '--long-params',
      JSON.stringify({ seconds: 5, tick_ms: 50 }),
      '--other-type',
      'demo.echo',
    ]);
    expectConformant(all);
    expectRunningChecks(all);
    expect(all.results.map((r) => r.name)).toEqual(CHECK_NAMES);
    expect(all.results.find((r) => r.name.startsWith('task id of another type'))?.verdict).toBe(
      'pass',
    );
    // A token from the command line (signature checks are then skips).
    const byToken = await kitCli([
      '--url',
      token.url,
      '--type',
      'demo.echo',
      '--token',
      TOKEN,
      '--only',
      'auth:',
    ]);
    expect(byToken.code).toBe(0);
    expect(
      byToken.results.find((r) => r.name === 'auth: wrong credentials refused with 401')?.verdict,
    ).toBe('pass');
    const some = await kitCli([
      '--url',
      hmac.url,
      '--type',
      'demo.echo',
      '--secret',
      SECRET,
      '--only',
      'FENCE:',
      '--only',
      'unknown task type',
    ]);
    expect(some.code).toBe(0);
    const names = some.results.map((r) => r.name);
    // The happy path first, in order, then the named checks in the kit's order.
    expect(names.slice(0, 2)).toEqual(['create: answers CREATE', 'create: idempotent on task_id']);
    expect(names).toContain('clean: -> FINISH');
    expect(names).toContain('fence: a lower fence is refused with 409 and changes nothing');
    expect(names).toContain('unknown task type: 404');
    expect(names).not.toContain('auth: missing credentials refused with 401');
    expect(names.length).toBeLessThan(CHECK_NAMES.length / 2);
    expect(names).toEqual(CHECK_NAMES.filter((n) => names.includes(n)));
  });
});

describe('conformance kit against a worker written without our library (plain node:http)', () => {
  it('passes with hmac auth, sync and async types', async () => {
    const worker = await startProcess(PLAIN_WORKER, {
      PORT: '0',
      AUTH_MODE: 'hmac',
      AUTH_SECRET: SECRET,
    });
    try {
      expectConformant(await kit(worker.url, 'plain.echo', hmacAuth, { otherType: 'plain.sleep' }));
      const sleeping = await kit(worker.url, 'plain.sleep', hmacAuth, {
        params: { ms: 200 },
        longParams: { ms: 5000 },
      });
      expectConformant(sleeping);
      expectRunningChecks(sleeping);
    } finally {
      await worker.stop();
    }
  });

  // The mode of authentication changes what a request carries, not what the worker does with it:
  // under a token, every check on the sync type, and the async type's happy path and auth checks.
  it('passes with token auth, sync and async types', async () => {
    const worker = await startProcess(PLAIN_WORKER, {
      PORT: '0',
      AUTH_MODE: 'token',
      AUTH_TOKEN: TOKEN,
    });
    try {
      expectConformant(
        await kit(worker.url, 'plain.echo', tokenAuth, { otherType: 'plain.sleep' }),
      );
      expectAuthConformant(
        await kit(worker.url, 'plain.sleep', tokenAuth, { params: { ms: 200 }, only: ['auth:'] }),
      );
    } finally {
      await worker.stop();
    }
  });
});

describe('conformance kit against deliberately broken workers', () => {
  it.each([
    ['fence', 'fence: a lower fence is refused with 409 and changes nothing'],
    ['auth', 'auth: missing credentials refused with 401'],
    ['idempotency', 'create: idempotent on task_id'],
    [
      'reattempt',
      're-sent create: the same attempt answers what is there; a newer one replaces an attempt that never ran',
    ],
    ['transitions', 'illegal transition: refused with 409 and nothing changes'],
    ['envelope', 'unknown task type: 404'],
    ['validation', 'body: unknown field refused with 400'],
    ['reclean', 'clean: a repeat answers FINISH and changes nothing'],
  ])('fails a worker broken in %s, on the check that names it', async (broken, check) => {
    const worker = await startProcess(PLAIN_WORKER, {
      PORT: '0',
      AUTH_MODE: 'hmac',
      AUTH_SECRET: SECRET,
      BROKEN: broken,
    });
    try {
      // The happy path and the one check: the whole kit is proven against good workers above.
      const run = await kit(worker.url, 'plain.echo', hmacAuth, { only: [check] });
      expect(run.code).toBe(1);
      expect(run.results.find((r) => r.name === check)?.verdict).toBe('fail');
    } finally {
      await worker.stop();
    }
  });

  it('fails a worker with no authentication at all', async () => {
    const worker = await startProcess(WORKER_MAIN, { WORKER_PORT: '0', BATON_AUTH_MODE: 'none' });
    try {
      const run = await kit(worker.url, 'demo.echo', { mode: 'none' }, { only: ['auth:'] });
      expect(run.code).toBe(1);
      expect(
        run.results.find((r) => r.name === 'auth: missing credentials refused with 401')?.verdict,
      ).toBe('fail');
    } finally {
      await worker.stop();
    }
  });
});

/**
 * A worker behind a restart command the kit can run: started (and started again) by a shell
 * script that kills the previous process with SIGKILL, on one port and one store.
 */
class RestartableWorker {
  readonly dir = mkdtempSync(join(tmpdir(), 'baton-kit-restart-'));
  readonly restartCmd: string;
  url = '';

  /** `env(port, dir)`: the worker's settings, its port and a directory for its store. */
  constructor(
    private readonly command: string,
    private readonly script: string,
    private readonly env: (port: number, dir: string) => Record<string, string>,
  ) {
    this.restartCmd = `sh ${join(this.dir, 'restart.sh')}`;
  }

  async start(): Promise<void> {
    const port = await freePort();
    this.url = `http://127.0.0.1:${port}`;
    const assignments = Object.entries(this.env(port, this.dir))
      .map(([k, v]) => `${k}='${v}'`)
      .join(' ');
    const pid = join(this.dir, 'pid');
    writeFileSync(
      join(this.dir, 'restart.sh'),
      [
        `[ -f '${pid}' ] && kill -9 "$(cat '${pid}')" 2>/dev/null`,
        'sleep 0.2',
        `cd '${ROOT}' && ${assignments} nohup ${this.command} ${this.script} < /dev/null >> '${join(this.dir, 'log')}' 2>&1 &`,
        `echo $! > '${pid}'`,
        '',
      ].join('\n'),
    );
    execSync(this.restartCmd);
    await eventually(
      async () =>
        (await fetch(`${this.url}/v1/task/x`).catch(() => undefined)) ? true : undefined,
      20_000,
      `${this.script} listening`,
    );
  }

  stop(): void {
    try {
      process.kill(Number(readFileSync(join(this.dir, 'pid'), 'utf8')), 'SIGKILL');
    } catch {
      // already gone
    }
    rmSync(this.dir, { recursive: true, force: true });
  }
}

/** The Python example, restartable, keeping its tasks in a file. */
const restartablePython = (env: Record<string, string>): RestartableWorker =>
  new RestartableWorker('python3', PYTHON_WORKER, (port, dir) => ({
    ...env,
    PORT: String(port),
    STATE_FILE: join(dir, 'tasks.json'),
  }));

describe('conformance kit: the restart check against the template worker (sqlite store)', () => {
  it('passes: tasks and fences kept, the run going at the restart answered execution_lost', async () => {
    const worker = new RestartableWorker(process.execPath, WORKER_MAIN, (port, dir) => ({
      WORKER_PORT: String(port),
      BATON_AUTH_MODE: 'hmac',
      BATON_AUTH_SECRET: SECRET,
      WORKER_STORE: 'sqlite',
      WORKER_STORE_PATH: join(dir, 'tasks.sqlite'),
    }));
    try {
      await worker.start();
      const run = await kit(worker.url, 'demo.sleep', hmacAuth, {
        params: { seconds: 0.3 },
        longParams: { seconds: 5, tick_ms: 50 },
        restartCmd: worker.restartCmd,
      });
      expectConformant(run);
      expect(
        run.results.find(
          (r) => r.name === 'restart: the worker keeps its tasks and says which runs it lost',
        ),
      ).toMatchObject({ verdict: 'pass', section: 'Crash recovery' });
    } finally {
      worker.stop();
    }
  });
});

describe('conformance kit against the Python example (examples/python-worker)', () => {
  it('passes with hmac auth, sync and async types, restart included', async () => {
    const auth = hmacAuth;
    const worker = restartablePython({ AUTH_MODE: 'hmac', AUTH_SECRET: SECRET });
    try {
      await worker.start();
      expectConformant(await kit(worker.url, 'py.echo', auth, { otherType: 'py.sleep' }));
      const sleeping = await kit(worker.url, 'py.sleep', auth, {
        params: { ms: 200 },
        longParams: { ms: 5000 },
        restartCmd: worker.restartCmd,
      });
      expectConformant(sleeping);
      expectRunningChecks(sleeping);
      expect(
        sleeping.results.find(
          (r) => r.name === 'restart: the worker keeps its tasks and says which runs it lost',
        ),
      ).toMatchObject({ verdict: 'pass', section: 'Crash recovery' });
    } finally {
      worker.stop();
    }
  });

  // As for the plain worker: under a token, every check on the sync type, and the async type's
  // happy path and auth checks (the restart is the same under either mode).
  it('passes with token auth, sync and async types', async () => {
    const worker = restartablePython({ AUTH_MODE: 'token', AUTH_TOKEN: TOKEN });
    try {
      await worker.start();
      expectConformant(await kit(worker.url, 'py.echo', tokenAuth, { otherType: 'py.sleep' }));
      expectAuthConformant(
        await kit(worker.url, 'py.sleep', tokenAuth, { params: { ms: 200 }, only: ['auth:'] }),
      );
    } finally {
      worker.stop();
    }
  });

  // Each new check, failing against a Python worker broken in exactly the way it looks for.
  it.each([
    ['content-type', 'body: a body that is not application/json is refused with 415'],
    ['body-limit', 'body: a body over the limit is refused with 413'],
    ['fence-header', 'fence: create and notify without X-Baton-Fence are refused with 400 (40002)'],
    ['other-type', 'task id of another type: 409 on create, unknown to every other call'],
    ['check-order', 'order of checks: the first broken rule in the contract’s order answers'],
    ['pause-running', 'pause of a running task: PAUSE, the run stands still, continue resumes it'],
    ['cancel-running', 'cancel of a running task: FAIL, and the run stops'],
    [
      'new-attempt',
      'a new attempt over a running one: the old run stops before the new attempt is held',
    ],
    ['forget', 'restart: the worker keeps its tasks and says which runs it lost'],
    ['restart-alive', 'restart: the worker keeps its tasks and says which runs it lost'],
    ['lost-alive', 'heartbeat of a run going on: alive, and not execution_lost'],
  ])('fails a Python worker broken in %s, on the check that names it', async (broken, check) => {
    const worker = restartablePython({
      AUTH_MODE: 'hmac',
      AUTH_SECRET: SECRET,
      BROKEN: broken,
    });
    try {
      await worker.start();
      const run = await kit(worker.url, 'py.sleep', hmacAuth, {
        params: { ms: 200 },
        longParams: { ms: 5000 },
        otherType: 'py.echo',
        restartCmd: worker.restartCmd,
        only: [check],
      });
      expect(run.code).toBe(1);
      expect(run.results.find((r) => r.name === check)).toMatchObject({ verdict: 'fail' });
    } finally {
      worker.stop();
    }
  });
});
