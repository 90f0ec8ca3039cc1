import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseAllDocuments } from 'yaml';
import {
  ADMIN_KEY,
  Api,
  Backend,
  embeddedBackend,
  startScheduler,
  startTemplateWorker,
} from './support/baton';
import { RunningProcess, eventually } from './support/processes';

jest.setTimeout(180_000);

type Json = Record<string, unknown>;
const CLI = join(__dirname, '..', 'dist', 'bin', 'topology.js');
const BATON = join(__dirname, '..', 'dist', 'bin', 'baton.js');

const FAILOVER_YAML = `# the failover, kept in Git
name: failover
description: check, promote, verify
nodes:
  - key: check
    task:
      create_info: { task_type: demo.echo }
      params: { primary: "{{input.cluster}}-db1" }
  - key: promote
    depends_on: [check]
    task:
      create_info: { task_type: demo.echo }
      params: { host: "{{nodes.check.result.echo.primary}}" }
  - key: verify
    depends_on: [promote]
    topology: { name: verify, input: { host: "{{nodes.promote.result.echo.host}}" } }
---
name: verify
nodes:
  - key: ping
    task:
      create_info: { task_type: demo.echo }
      params: { host: "{{input.host}}" }
`;

// On the embedded defaults only: MariaDB, Redis and the other lock backends are proven by the
// store, queue and lock conformance suites and the scheduler-flows and crash e2e files.
describe.each([['sqlite + memory + local locks', async () => embeddedBackend()]])(
  'topology files and timers on %s',
  (_name, makeBackend: () => Promise<Backend>) => {
    let backend: Backend;
    let dir: string;
    let scheduler: RunningProcess;
    let worker: RunningProcess;
    let api: Api;

    beforeAll(async () => {
      backend = await makeBackend();
      dir = mkdtempSync(join(tmpdir(), 'baton-topology-cli-'));
      scheduler = await startScheduler(backend, { BATON_INSTANCE_ID: 'topology-cli-1' });
      worker = await startTemplateWorker('topology-cli-w1', scheduler.url, join(dir, 'runs.jsonl'));
      api = new Api(scheduler.url);
      await api.waitForWorkers(1);
    });

    afterAll(async () => {
      await worker?.stop();
      await scheduler?.stop();
      await backend?.cleanup();
      rmSync(dir, { recursive: true, force: true });
    });

    /** `npm run topology -- <args>`, as CI would run it. */
    const cli = (...args: string[]): { status: number | null; out: string; err: string } => {
      const r = spawnSync(process.execPath, [CLI, ...args], {
        encoding: 'utf8',
        env: { ...process.env, BATON_URL: scheduler.url, BATON_KEY: ADMIN_KEY },
        timeout: 60_000,
      });
      return { status: r.status, out: r.stdout, err: r.stderr };
    };
    const versions = async (name: string): Promise<number[]> => {
      const r = await api.call<{ version: number }[]>('GET', `/v1/topologies/${name}/versions`);
      return r.status === 200 ? r.data.map((v) => v.version) : [];
    };

    it('applies a YAML file of two definitions (the sub-topology first), again as a no-op, and exports them back', async () => {
      const file = join(dir, 'failover.yaml');
      writeFileSync(file, FAILOVER_YAML);
      const first = cli('apply', '-f', file);
      expect(first).toMatchObject({ status: 0 });
      // failover runs verify: verify is saved first, though the file lists it second.
      expect(first.out.trim().split('\n')).toEqual(['verify: version 1', 'failover: version 1']);
      expect(cli('apply', '-f', file).out).toContain('failover: version 1 (unchanged)');
      expect(await versions('failover')).toEqual([1]);

      // What export writes, apply takes back unchanged; in JSON too.
      const exported = cli('export', 'failover', 'verify');
      expect(exported.status).toBe(0);
      const docs = parseAllDocuments(exported.out).map((d) => d.toJS() as Json);
      expect(docs.map((d) => d.name)).toEqual(['failover', 'verify']);
      expect(docs[0]).not.toHaveProperty('version');
      const back = join(dir, 'exported.yaml');
      writeFileSync(back, exported.out);
      expect(cli('apply', '-f', back).out).toBe(
        'verify: version 1 (unchanged)\nfailover: version 1 (unchanged)\n',
      );
      const json = join(dir, 'all.json');
      expect(cli('export', '--all', '-o', json).status).toBe(0);
      const all = JSON.parse(readFileSync(json, 'utf8')) as Json[];
      expect(all.map((d) => d.name).sort()).toEqual(['failover', 'verify']);

      // A change is a new version; runs of the file's definition work end to end.
      writeFileSync(file, FAILOVER_YAML.replace('check, promote, verify', 'v2'));
      expect(cli('apply', '-f', file).out).toContain('failover: version 2');
      const run = await api.call<{ run_id: string }>('POST', '/v1/topologies/failover/runs', {
        input: { cluster: 'orders' },
      });
      const done = await eventually(
        async () => {
          const r = await api.call<{ status: string; outcome: string; version: number }>(
            'GET',
            `/v1/topology-runs/${run.data.run_id}`,
          );
          return r.data.status === 'FINISH' ? r.data : undefined;
        },
        60_000,
        'the failover run finishing',
      );
      expect(done).toMatchObject({ outcome: 'SUCCESS', version: 2 });
    });

    it('refuses a bad definition with the node named, applies nothing after it, and exits 1', async () => {
      const file = join(dir, 'bad.yaml');
      writeFileSync(
        file,
        `name: broken
nodes:
  - key: a
    task: { create_info: { task_type: demo.echo } }
  - key: b
    depends_on: [nowhere]
    task: { create_info: { task_type: demo.echo } }
`,
      );
      const dry = cli('apply', '--dry-run', '-f', file);
      expect(dry.status).toBe(1);
      expect(dry.err).toMatch(/broken: refused \(400\): .*\bb\b/);
      const r = cli('apply', '-f', file);
      expect(r.status).toBe(1);
      expect(r.err).toContain('nowhere');
      expect(await versions('broken')).toEqual([]);
      // A file that cannot be read is the command line's fault: exit 2, as a bad option.
      expect(cli('apply', '-f', join(dir, 'missing.yaml'))).toMatchObject({ status: 2 });
      expect(cli('frobnicate')).toMatchObject({ status: 2 });
      // A YAML alias bomb (each level names the one before nine times): one line, no stack.
      const bomb = join(dir, 'bomb.yaml');
      const levels = ['a0: &a0 [x, x, x, x, x, x, x, x, x]'];
      for (let i = 1; i < 9; i++)
        levels.push(`a${i}: &a${i} [${Array.from({ length: 9 }, () => `*a${i - 1}`).join(', ')}]`);
      writeFileSync(bomb, `${levels.join('\n')}\nname: bomb\nnodes: *a8\n`);
      const boom = cli('apply', '--dry-run', '-f', bomb);
      expect(boom.status).toBe(2);
      expect(boom.err.trim().split('\n')).toEqual([
        expect.stringMatching(/bomb\.yaml: not YAML: .*aliases/),
      ]);
    });

    it('runs as the `baton` command: a task from standard input waited for, and exit statuses for scripts', () => {
      expect(readFileSync(BATON, 'utf8').startsWith('#!/usr/bin/env node\n')).toBe(true);
      const baton = (input: string | undefined, ...args: string[]) => {
        const r = spawnSync(process.execPath, [BATON, ...args], {
          encoding: 'utf8',
          input,
          env: {
            ...process.env,
            BATON_URL: scheduler.url,
            BATON_KEY: ADMIN_KEY,
            BATON_CONFIG: join(dir, 'no-profiles.json'),
          },
          timeout: 120_000,
        });
        return { status: r.status, out: r.stdout, err: r.stderr };
      };
      expect(baton(undefined, '--help')).toMatchObject({ status: 0 });
      const body = {
        create_info: { task_type: 'demo.echo', task_name: 'from stdin' },
        params: { x: 1 },
      };
      const done = baton(JSON.stringify(body), 'tasks', 'create', '-f', '-', '--wait', '--json');
      expect([done.status, done.err]).toEqual([0, expect.stringMatching(/^created \S+; waiting/)]);
      expect(JSON.parse(done.out)).toMatchObject({
        task_status: 'FINISH',
        outcome: 'SUCCESS',
        task_name: 'from stdin',
      });
      expect(baton(undefined, 'tasks', 'get', 'no-such-task')).toMatchObject({ status: 1 });
      expect(baton(undefined, 'tasks', 'list', '--url', 'http://127.0.0.1:9')).toMatchObject({
        status: 3,
      });
      expect(baton(undefined, 'tasks', 'lst')).toMatchObject({ status: 2 });
    });

    it('fires a timer whose template is a topology: one run per slot, labelled with it', async () => {
      await api.call('POST', '/v1/topologies', {
        name: 'nightly',
        nodes: [{ key: 'backup', task: { create_info: { task_type: 'demo.echo' } } }],
      });
      // Exactly one of task and topology; the definition must exist.
      const bad = async (body: Json): Promise<number> =>
        (
          await api.call('POST', '/v1/timers', {
            name: 't',
            schedule: { kind: 'interval', every_ms: 1000 },
            ...body,
          })
        ).status;
      expect(await bad({})).toBe(400);
      expect(
        await bad({
          topology: { name: 'nightly' },
          task: { create_info: { task_type: 'demo.echo' } },
        }),
      ).toBe(400);
      expect(await bad({ topology: { name: 'no-such-flow' } })).toBe(400);
      // Labels its runs could not hold are refused at save, not at every fire.
      expect(await bad({ topology: { name: 'nightly', labels: { 'a:b': 'x' } } })).toBe(400);
      expect(
        (await api.call('POST', '/v1/topologies/nightly/runs', { labels: { team: 42 } })).status,
      ).toBe(400);

      const timer = await api.call<{ timer_id: string; topology: Json; task: unknown }>(
        'POST',
        '/v1/timers',
        {
          name: 'nightly backup',
          schedule: { kind: 'interval', every_ms: 1000 },
          topology: { name: 'nightly', input: { db: 'orders' }, labels: { team: 'dba' } },
        },
      );
      expect(timer.status).toBe(201);
      expect(timer.data).toMatchObject({ task: null, topology: { name: 'nightly' } });
      const id = timer.data.timer_id;
      type RunRow = {
        run_id: string;
        status: string;
        outcome: string;
        labels: Record<string, string>;
      };
      const runs = await eventually(
        async () => {
          const r = await api.call<{ items: RunRow[] }>(
            'GET',
            `/v1/topology-runs?name=nightly&label=timer_id:${id}`,
          );
          const done = r.data.items.filter((x) => x.status === 'FINISH');
          return done.length >= 3 ? done : undefined;
        },
        60_000,
        'three runs fired by the timer',
      );
      expect((await api.call('DELETE', `/v1/timers/${id}`)).status).toBeLessThan(300);
      for (const r of runs)
        expect(r).toMatchObject({ outcome: 'SUCCESS', labels: { team: 'dba' } });
      const slots = runs.map((r) => r.labels.fire_time);
      expect(new Set(slots).size).toBe(slots.length);
      expect((await api.call('GET', `/v1/timers/${id}`)).status).toBe(404);
    });
  },
);
