/**
 * `npm run contract:check -- --url http://HOST:PORT --type TYPE [--token T | --secret S]
 *  [--params JSON] [--long-params JSON] [--other-type TYPE] [--max-body BYTES]
 *  [--restart-cmd COMMAND] [--timeout-ms N] [--only TEXT]... [--json]`
 * `npm run contract:check -- --worker-cmd COMMAND [--url-env NAME] --type ASYNC_TYPE
 *  [--params JSON] [--token T | --secret S] [--timeout-ms N] [--only TEXT]... [--json]`
 *
 * Drives a live worker through the contract and prints a verdict per check. With
 * `--worker-cmd` it checks the worker's side instead: it starts the worker itself (the command,
 * with the stand-in scheduler's URL in the variable `--url-env`, BATON_SCHEDULER_URL unless
 * given) and checks what the worker sends. `--only TEXT`
 * (repeatable) runs the happy path and then only the checks whose name contains TEXT. Exit code 0 when no
 * check failed, 1 when one did, 2 on bad arguments. Credentials may also come from
 * BATON_AUTH_TOKEN / BATON_AUTH_SECRET.
 */
import { parseArgs } from 'node:util';
import { AuthConfig } from '../worker/auth/request-auth';
import { CheckResult, ConformanceKit, formatResults } from './conformance-kit';
import { WorkerSideKit } from './worker-side/worker-side-kit';

const USAGE =
  'usage: contract:check -- --url http://HOST:PORT --type TYPE [--token T | --secret S] [--params JSON] ' +
  '[--long-params JSON] [--other-type TYPE] [--max-body BYTES] [--restart-cmd COMMAND] [--timeout-ms N] ' +
  '[--only TEXT]... [--json]\n' +
  '   or: contract:check -- --worker-cmd COMMAND [--url-env NAME] --type ASYNC_TYPE [--params JSON] ' +
  '[--token T | --secret S] [--timeout-ms N] [--only TEXT]... [--json]';

function jsonObject(text: string | undefined, flag: string): Record<string, unknown> | undefined {
  if (text === undefined) return undefined;
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    fail(`${flag} must be a JSON object`);
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value))
    fail(`${flag} must be a JSON object`);
  return value as Record<string, unknown>;
}

function fail(message: string): never {
  console.error(`${message}\n${USAGE}`);
  process.exit(2);
}

async function main(): Promise<void> {
  let values;
  try {
    ({ values } = parseArgs({
      options: {
        url: { type: 'string' },
        type: { type: 'string' },
        token: { type: 'string' },
        secret: { type: 'string' },
        params: { type: 'string' },
        'long-params': { type: 'string' },
        'other-type': { type: 'string' },
        'max-body': { type: 'string' },
        'restart-cmd': { type: 'string' },
        'worker-cmd': { type: 'string' },
        'url-env': { type: 'string' },
        'timeout-ms': { type: 'string' },
        only: { type: 'string', multiple: true },
        json: { type: 'boolean', default: false },
      },
      strict: true,
    }));
  } catch (err) {
    fail(err instanceof Error ? err.message : String(err));
  }
  const workerCmd = values['worker-cmd'];
  if (workerCmd !== undefined && values.url) fail('give --url or --worker-cmd, not both');
  if (workerCmd === undefined && !values.url) fail('--url (or --worker-cmd) is required');
  if (!values.type) fail('--type is required');
  if (workerCmd !== undefined && workerCmd.trim() === '') fail('--worker-cmd needs a command');
  const urlOnly = ['long-params', 'other-type', 'max-body', 'restart-cmd'] as const;
  const misplaced = urlOnly.filter((k) => workerCmd !== undefined && values[k] !== undefined);
  if (misplaced.length > 0) fail(`--${misplaced.join(', --')}: only with --url, not --worker-cmd`);
  if (workerCmd === undefined && values['url-env'] !== undefined)
    fail('--url-env: only with --worker-cmd');
  if (values['url-env'] !== undefined && !/^[A-Za-z_][A-Za-z0-9_]*$/.test(values['url-env']))
    fail('--url-env must be an environment variable name');
  if (values.url) {
    try {
      new URL(values.url);
    } catch {
      fail(`--url ${values.url} is not a URL`);
    }
  }
  const token = values.token ?? process.env.BATON_AUTH_TOKEN;
  const secret = values.secret ?? process.env.BATON_AUTH_SECRET;
  if (token && secret) fail('give --token or --secret, not both');
  const auth: AuthConfig = secret
    ? { mode: 'hmac', secret }
    : token
      ? { mode: 'token', token }
      : { mode: 'none' };
  const params = jsonObject(values.params, '--params') ?? {};
  const longParams = jsonObject(values['long-params'], '--long-params');
  const maxBody = values['max-body'] ? Number(values['max-body']) : undefined;
  if (maxBody !== undefined && (!Number.isInteger(maxBody) || maxBody <= 0))
    fail('--max-body must be a positive integer');
  const timeout = values['timeout-ms'] ? Number(values['timeout-ms']) : 30_000;
  if (!Number.isInteger(timeout) || timeout <= 0) fail('--timeout-ms must be a positive integer');

  if (values.only?.some((t) => t.trim() === '')) fail('--only needs the text of a check name');
  let kit: { run(): Promise<CheckResult[]> };
  try {
    kit = workerCmd
      ? new WorkerSideKit({
          command: workerCmd,
          urlEnv: values['url-env'],
          type: values.type,
          params,
          auth,
          outcomeTimeoutMs: timeout,
          only: values.only,
        })
      : new ConformanceKit({
          url: values.url as string,
          type: values.type,
          auth,
          params,
          outcomeTimeoutMs: timeout,
          longParams,
          otherType: values['other-type'],
          maxBodyBytes: maxBody,
          restartCmd: values['restart-cmd'],
          only: values.only,
        });
  } catch (err) {
    fail(err instanceof Error ? err.message : String(err));
  }
  const results = await kit.run();
  console.log(values.json ? JSON.stringify(results, null, 2) : formatResults(results));
  process.exit(results.some((r) => r.verdict === 'fail') ? 1 : 0);
}

main().catch((err: unknown) => {
  console.error(
    `contract check could not run: ${err instanceof Error ? err.message : String(err)}`,
  );
  process.exit(1);
});
