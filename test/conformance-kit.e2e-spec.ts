import { CheckResult } from '@baton/task-contract';
import {
  CONTRACT_CLI,
  PLAIN_WORKER,
  RunningProcess,
  WORKER_MAIN,
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

async function kit(url: string, type: string, auth: string[], params?: object): Promise<KitRun> {
  const args = ['--url', url, '--type', type, ...auth, '--json', '--timeout-ms', '10000'];
  if (params) args.push('--params', JSON.stringify(params));
  const { code, out } = await runScript(CONTRACT_CLI, args);
  const start = out.indexOf('[');
  const results = start >= 0 ? (JSON.parse(out.slice(start)) as CheckResult[]) : [];
  return { code, results, out };
}

const failed = (run: KitRun): string[] =>
  run.results.filter((r) => r.verdict === 'fail').map((r) => `${r.name}: ${r.detail}`);

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

  it.each([
    ['demo.echo', undefined],
    ['demo.sleep', { seconds: 0.3, tick_ms: 50 }],
    ['demo.flaky', { fail_times: 0 }],
    ['demo.rollback', undefined],
  ])('passes for %s with HMAC, including replay refusal', async (type, params) => {
    const run = await kit(hmac.url, type, ['--secret', SECRET], params);
    expectConformant(run);
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
    const run = await kit(token.url, 'demo.echo', ['--token', TOKEN]);
    expectConformant(run);
    expect(run.results.find((r) => r.name.startsWith('auth: a replayed signature'))?.verdict).toBe(
      'skip',
    );
  });

  it('fails when given the wrong credentials, naming the 401s', async () => {
    const run = await kit(hmac.url, 'demo.echo', ['--secret', `${SECRET}-wrong`]);
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
  });
});

describe('conformance kit against a worker written without our library (plain node:http)', () => {
  it.each([
    ['hmac', ['--secret', SECRET], { AUTH_MODE: 'hmac', AUTH_SECRET: SECRET }],
    ['token', ['--token', TOKEN], { AUTH_MODE: 'token', AUTH_TOKEN: TOKEN }],
  ])('passes with %s auth, sync and async types', async (_mode, auth, env) => {
    const worker = await startProcess(PLAIN_WORKER, { PORT: '0', ...env });
    try {
      expectConformant(await kit(worker.url, 'plain.echo', auth));
      expectConformant(await kit(worker.url, 'plain.sleep', auth, { ms: 200 }));
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
  ])('fails a worker broken in %s, on the check that names it', async (broken, check) => {
    const worker = await startProcess(PLAIN_WORKER, {
      PORT: '0',
      AUTH_MODE: 'hmac',
      AUTH_SECRET: SECRET,
      BROKEN: broken,
    });
    try {
      const run = await kit(worker.url, 'plain.echo', ['--secret', SECRET]);
      expect(run.code).toBe(1);
      expect(run.results.find((r) => r.name === check)?.verdict).toBe('fail');
    } finally {
      await worker.stop();
    }
  });

  it('fails a worker with no authentication at all', async () => {
    const worker = await startProcess(WORKER_MAIN, { WORKER_PORT: '0', BATON_AUTH_MODE: 'none' });
    try {
      const run = await kit(worker.url, 'demo.echo', []);
      expect(run.code).toBe(1);
      expect(
        run.results.find((r) => r.name === 'auth: missing credentials refused with 401')?.verdict,
      ).toBe('fail');
    } finally {
      await worker.stop();
    }
  });
});
