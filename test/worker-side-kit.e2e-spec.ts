import {
  AuthConfig,
  CheckResult,
  WORKER_SIDE_CHECK_NAMES,
  WorkerSideKit,
  WorkerSideOptions,
} from '@baton/task-contract';
import { CONTRACT_CLI, PYTHON_WORKER, WORKER_MAIN, runScript } from './support/processes';

jest.setTimeout(300_000);

const SECRET = 'conformance-secret-0123456789';
const hmacAuth: AuthConfig = { mode: 'hmac', secret: SECRET };

/** The template worker, told the stand-in's URL in BATON_SCHEDULER_URL (the kit's default). */
const template: Omit<WorkerSideOptions, 'auth'> = {
  command: `node ${WORKER_MAIN}`,
  type: 'demo.sleep',
  params: { seconds: 1.5, tick_ms: 100 },
  env: {
    WORKER_PORT: '0',
    WORKER_ID: 'kit-template',
    BATON_AUTH_MODE: 'hmac',
    BATON_AUTH_SECRET: SECRET,
    // Longer than the stand-in asks for: the timing check sees whether the answer is followed.
    WORKER_HEARTBEAT_MS: '5000',
  },
};

/** The Python example, which reads the scheduler's URL from SCHEDULER_URL. */
const python = (env: NodeJS.ProcessEnv = {}): Omit<WorkerSideOptions, 'auth'> => ({
  command: `python3 ${PYTHON_WORKER}`,
  urlEnv: 'SCHEDULER_URL',
  type: 'py.sleep',
  params: { ms: 1500, tick_ms: 100 },
  env: { AUTH_MODE: 'hmac', AUTH_SECRET: SECRET, PYTHONUNBUFFERED: '1', ...env },
});

const verdicts = (results: CheckResult[]): Record<string, string> =>
  Object.fromEntries(results.map((r) => [r.name, `${r.verdict}: ${r.detail}`]));

const everyCheckPassed = (results: CheckResult[]): void => {
  expect(results.map((r) => r.name)).toEqual(WORKER_SIDE_CHECK_NAMES);
  expect(results.filter((r) => r.verdict !== 'pass').map((r) => `${r.name}: ${r.detail}`)).toEqual(
    [],
  );
};

/**
 * The kit's worker side: a stand-in scheduler takes what a worker sends (registration,
 * heartbeats, callbacks, logs) and the kit signals it (SIGTERM). The template worker and the
 * Python example pass every check; the Python example broken in one way (BROKEN=…) fails the
 * matching check, and only that one.
 */
describe('conformance kit, worker side', () => {
  it('the template worker passes every check', async () => {
    everyCheckPassed(await new WorkerSideKit({ ...template, auth: hmacAuth }).run());
  });

  it('the Python example passes every check', async () => {
    everyCheckPassed(await new WorkerSideKit({ ...python(), auth: hmacAuth }).run());
  });

  it.each([
    ['ignore-timing', 'heartbeats as often', /asked for every 250 ms/],
    ['stale-fence', 'highest fence', /fence 3/],
    ['no-retry', 'retries an outcome report', /not again within 15 s/],
    ['retry-409', 'answered 409', /was sent [2-9] times/],
    ['log-drop', 'log lines', /was not sent again/],
    ['sigterm-fail', 'SIGTERM', /reported FAIL/],
  ])('the Python example with BROKEN=%s fails "%s"', async (broken, check, why) => {
    const results = await new WorkerSideKit({
      ...python({ BROKEN: broken }),
      auth: hmacAuth,
      only: [check],
    }).run();
    const failedOnes = results.filter((r) => r.verdict === 'fail');
    expect(failedOnes.map((r) => r.name)).toEqual([
      WORKER_SIDE_CHECK_NAMES.find((n) => n.includes(check)),
    ]);
    expect(failedOnes[0].detail).toMatch(why);
    // The registration ran first and passed: the failure is the check's own.
    expect(results[0].verdict).toBe('pass');
  });

  it('a 1.0.0 worker (no contract_version at registration) fails the registration check', async () => {
    const results = await new WorkerSideKit({
      ...python({ CONTRACT_VERSION: '1.0.0' }),
      auth: hmacAuth,
      only: ['registers'],
    }).run();
    expect(verdicts(results)).toEqual({
      [WORKER_SIDE_CHECK_NAMES[0]]: expect.stringMatching(/^fail: .*names no contract_version/),
    });
  });

  it('a worker signing with another secret fails at its registration', async () => {
    const results = await new WorkerSideKit({
      ...python({ AUTH_SECRET: `${SECRET}-other` }),
      auth: hmacAuth,
      only: ['registers'],
    }).run();
    expect(results[0]).toMatchObject({ verdict: 'fail' });
    expect(results[0].detail).toMatch(/not authenticated/);
  });

  it('the CLI runs it with --worker-cmd and refuses options of the other side', async () => {
    const run = await runScript(
      CONTRACT_CLI,
      [
        '--worker-cmd',
        `python3 ${PYTHON_WORKER}`,
        '--url-env',
        'SCHEDULER_URL',
        '--type',
        'py.sleep',
        '--params',
        '{"ms":1500,"tick_ms":100}',
        '--secret',
        SECRET,
        '--only',
        'registers',
        '--json',
      ],
      120_000,
      { AUTH_MODE: 'hmac', AUTH_SECRET: SECRET },
    );
    expect(run.code).toBe(0);
    const results = JSON.parse(run.out.slice(run.out.indexOf('['))) as CheckResult[];
    expect(results).toEqual([expect.objectContaining({ verdict: 'pass', section: 'Timing' })]);
    for (const args of [
      ['--worker-cmd', 'true', '--type', 'x', '--restart-cmd', 'true'],
      ['--worker-cmd', 'true', '--url', 'http://127.0.0.1:1', '--type', 'x'],
      ['--url', 'http://127.0.0.1:1', '--type', 'x', '--url-env', 'X'],
      ['--worker-cmd', 'true', '--type', 'x', '--url-env', 'not a name'],
    ]) {
      const refused = await runScript(CONTRACT_CLI, args);
      expect({ args, code: refused.code }).toEqual({ args, code: 2 });
    }
  });
});
