import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  Api,
  Backend,
  embeddedBackend,
  startScheduler,
  startTemplateWorker,
} from './support/baton';
import { RunningProcess } from './support/processes';

jest.setTimeout(240_000);

interface Row {
  task_id: string;
  task_name: string;
  tenant: string;
  task_status: string;
  outcome: string | null;
  attempt: number;
  important_level: number;
  worker_id: string | null;
  parent_task_id: string | null;
  control_task_id: string | null;
  updated_at: string;
}
interface Page {
  items: Row[];
  next_cursor: string | null;
}

/**
 * `GET /v1/tasks`'s search, sorts and filters through the real scheduler and a real worker:
 * results, paging across ties in every order, refusals in the envelope, and a tenant's key kept
 * to its tenant. On the embedded defaults; the same queries on MariaDB (FULLTEXT search
 * included) are proven by apps/scheduler/src/task-store/task-list.int-spec.ts.
 */
describe.each([['sqlite + memory', async () => embeddedBackend()]])(
  'the task list on %s',
  (_name, makeBackend: () => Promise<Backend>) => {
    let backend: Backend;
    let scheduler: RunningProcess;
    let worker: RunningProcess;
    let api: Api;
    let dir: string;
    const tenant = 'listing';
    const made: string[] = [];
    let parent: string;
    let flaky: string;

    const page = async (query: string, as = api): Promise<Page> => {
      const res = await as.call<Page>('GET', `/v1/tasks?${query}`);
      expect({ query, status: res.status, code: res.code }).toEqual({
        query,
        status: 200,
        code: 0,
      });
      return res.data;
    };
    const ids = async (query: string, as = api): Promise<string[]> =>
      (await page(query, as)).items.map((t) => t.task_id);
    /** Every page of a query, following the cursors, `limit` a page. */
    const walk = async (query: string, limit: number): Promise<string[]> => {
      const seen: string[] = [];
      let cursor: string | null = null;
      do {
        const p = await page(`${query}&limit=${limit}${cursor ? `&cursor=${cursor}` : ''}`);
        seen.push(...p.items.map((t) => t.task_id));
        cursor = p.next_cursor;
      } while (cursor && seen.length < 500);
      return seen;
    };

    beforeAll(async () => {
      dir = mkdtempSync(join(tmpdir(), 'baton-list-'));
      backend = await makeBackend();
      scheduler = await startScheduler(backend);
      api = new Api(scheduler.url);
      worker = await startTemplateWorker('lister-1', api.base, join(dir, 'runs.jsonl'));
      await api.waitForWorkers(1);
      await api.call('PATCH', '/v1/task-types/demo.flaky', {
        backoff_base_ms: 50,
        backoff_max_ms: 100,
      });
      const names = [
        'Nightly backup of orders_db',
        'nightly BACKUP of billing',
        'réindex the warehouse',
        'reindex customers',
        'send invoices',
        'send reminders',
      ];
      parent = await api.create({
        tenant,
        create_info: { task_type: 'demo.echo', task_name: 'parent of all' },
      });
      made.push(parent);
      for (let i = 0; i < 12; i++) {
        made.push(
          await api.create({
            tenant,
            create_info: {
              task_type: 'demo.echo',
              task_name: `${names[i % names.length]} ${i}`,
              important_level: i % 3,
              ...(i % 4 === 0 ? { parent_task_id: parent } : {}),
              ...(i % 6 === 1 ? { control_task_id: parent } : {}),
            },
          }),
        );
      }
      flaky = await api.create({
        tenant,
        create_info: { task_type: 'demo.flaky', task_name: 'flaky one', important_level: 1 },
        params: { fail_times: 1 },
      });
      made.push(flaky);
      // Another tenant's task with a name that matches every search below.
      await api.create({
        tenant: 'other',
        create_info: { task_type: 'demo.echo', task_name: 'Nightly backup reindex send invoices' },
      });
      for (const id of made) await api.until(id, 'FINISH', 60_000);
    });

    afterAll(async () => {
      await worker?.stop();
      await scheduler?.stop();
      await backend?.cleanup();
      if (dir) rmSync(dir, { recursive: true, force: true });
    });

    it('searches names by words and finds a task by its id', async () => {
      const all = (await page(`tenant=${tenant}&limit=100`)).items;
      const named = (re: RegExp): string[] =>
        all.filter((t) => re.test(t.task_name)).map((t) => t.task_id);
      await expect(ids(`tenant=${tenant}&search=backup`)).resolves.toEqual(named(/backup/i));
      await expect(
        ids(`tenant=${tenant}&search=${encodeURIComponent('REINDEX')}`),
      ).resolves.toEqual(named(/r[ée]index/i));
      await expect(
        ids(`tenant=${tenant}&search=${encodeURIComponent('nightly ord')}`),
      ).resolves.toEqual(named(/orders_db/));
      await expect(ids(`tenant=${tenant}&search=${flaky.toLowerCase()}`)).resolves.toEqual([flaky]);
      await expect(
        ids(`tenant=${tenant}&name_prefix=${encodeURIComponent('send inv')}`),
      ).resolves.toEqual(named(/^send inv/));
      await expect(ids(`tenant=${tenant}&name_prefix=Send`)).resolves.toEqual([]);
      expect(named(/backup/i).length).toBeGreaterThan(1);
    });

    it('filters by parent, control task, worker, attempts and outcome', async () => {
      const all = (await page(`tenant=${tenant}&limit=100`)).items;
      const where = (f: (t: Row) => boolean): string[] => all.filter(f).map((t) => t.task_id);
      const children = where((t) => t.parent_task_id === parent);
      expect(children).toHaveLength(3);
      await expect(ids(`parent_task_id=${parent}`)).resolves.toEqual(children);
      await expect(ids(`control_task_id=${parent}`)).resolves.toEqual(
        where((t) => t.control_task_id === parent),
      );
      await expect(ids(`tenant=${tenant}&worker=lister-1`)).resolves.toEqual(
        where((t) => t.worker_id === 'lister-1'),
      );
      expect(where((t) => t.worker_id === 'lister-1')).toHaveLength(made.length);
      await expect(ids(`tenant=${tenant}&worker=nobody`)).resolves.toEqual([]);
      await expect(ids(`tenant=${tenant}&attempts_min=2`)).resolves.toEqual([flaky]);
      await expect(
        ids(`tenant=${tenant}&outcome=SUCCESS&attempts_min=1&name_prefix=flaky`),
      ).resolves.toEqual([flaky]);
    });

    it('pages through every order without a gap or a repeat, ties broken by id', async () => {
      const all = (await page(`tenant=${tenant}&limit=100`)).items;
      expect(all).toHaveLength(made.length);
      const orders: [string, (t: Row) => number][] = [
        ['created', () => 0],
        ['updated', (t) => Date.parse(t.updated_at)],
        ['priority', (t) => t.important_level],
      ];
      for (const [sort, key] of orders) {
        for (const order of ['desc', 'asc']) {
          const sign = order === 'asc' ? 1 : -1;
          const expected = [...all]
            .sort((a, b) => sign * (key(a) - key(b) || (a.task_id < b.task_id ? -1 : 1)))
            .map((t) => t.task_id);
          const seen = await walk(`tenant=${tenant}&sort=${sort}&order=${order}`, 4);
          expect({ sort, order, seen }).toEqual({ sort, order, seen: expected });
        }
      }
    });

    it('keeps old cursors (a bare id) for newest first and refuses a cursor of another order', async () => {
      const first = await page(`tenant=${tenant}&limit=3`);
      expect(first.next_cursor).toBe(first.items[2].task_id);
      const second = await ids(`tenant=${tenant}&limit=3&cursor=${first.next_cursor}`);
      const all = await ids(`tenant=${tenant}&limit=100`);
      expect(second).toEqual(all.slice(3, 6));
      const byPriority = await page(`tenant=${tenant}&limit=3&sort=priority`);
      expect(byPriority.next_cursor).not.toBe(byPriority.items[2].task_id);
      for (const [query, message] of [
        [`sort=updated&cursor=${first.next_cursor}`, /cursor belongs to sort=created&order=desc/],
        [`sort=priority&order=asc&cursor=${byPriority.next_cursor}`, /not sort=priority&order=asc/],
        [`cursor=${byPriority.next_cursor}`, /cursor belongs to sort=priority/],
        [
          `cursor=${Buffer.from('{"s":"updated"}').toString('base64url')}xxxx`,
          /not one this API gave out/,
        ],
        ['cursor=01abc', /not one this API gave out/],
      ] as const) {
        const res = await api.call('GET', `/v1/tasks?${query}`);
        expect({ query, status: res.status, code: res.code, data: res.data !== undefined }).toEqual(
          {
            query,
            status: 400,
            code: 40000,
            data: true,
          },
        );
        expect(res.message).toMatch(message);
      }
    });

    it('refuses bad values with 400 in the envelope', async () => {
      for (const query of [
        'sort=name',
        'order=up',
        'attempts_min=0',
        'attempts_min=two',
        'attempts_min=1.5',
        'parent_task_id=a%20b',
        'control_task_id=' + 'x'.repeat(65),
        'worker=w%2F1',
        `name_prefix=${'n'.repeat(201)}`,
        'name_prefix=',
        'search=',
        'search=a%20to%20be',
        'search=%21%21',
      ]) {
        const res = await api.call('GET', `/v1/tasks?${query}`);
        expect({ query, status: res.status, code: res.code, has: Object.keys(res).sort() }).toEqual(
          {
            query,
            status: 400,
            code: 40000,
            has: ['code', 'data', 'message', 'status'],
          },
        );
      }
    });

    it("keeps a tenant's key to its tenant with every new parameter", async () => {
      const made = await api.call<{ key: string }>('POST', '/v1/api-keys', {
        name: 'other-viewer',
        role: 'viewer',
        tenant: 'other',
      });
      expect(made.status).toBe(201);
      const other = new Api(scheduler.url, made.data.key);
      const theirs = await ids('search=nightly', other);
      expect(theirs).toHaveLength(1);
      for (const query of [
        'search=backup',
        `search=${flaky}`,
        'name_prefix=Nightly',
        `parent_task_id=${parent}`,
        `control_task_id=${parent}`,
        'worker=lister-1',
        'attempts_min=2',
        'sort=priority',
        'sort=updated&order=asc',
      ]) {
        const rows = (await page(query, other)).items;
        expect({ query, tenants: [...new Set(rows.map((t) => t.tenant))] }).toEqual({
          query,
          tenants: rows.length ? ['other'] : [],
        });
      }
      const res = await other.call('GET', `/v1/tasks?tenant=${tenant}&search=backup`);
      expect(res.status).toBe(403);
      await expect(ids(`search=${flaky}`, other)).resolves.toEqual([]);
    });
  },
);
