import { mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Browser, Page, chromium } from 'playwright-core';
import {
  ADMIN_KEY,
  Api,
  Backend,
  embeddedBackend,
  startScheduler,
  startTemplateWorker,
} from './support/baton';
import { ROOT, RunningProcess, eventually, startProcess } from './support/processes';

jest.setTimeout(180_000);

const CHROMIUM = '/usr/bin/chromium';
const SHOTS = join(ROOT, '.test-results', 'console');
const AXE = readFileSync(require.resolve('axe-core/axe.min.js'), 'utf8');

/**
 * The task list's search, order and filters are the server's: a task far down the list (not on
 * the first page) is found by a word of its name, by its id and by the start of its name, and an
 * order kept in the address puts it first. Real scheduler, worker and console; Debian's Chromium.
 */
describe('console task search in a browser', () => {
  let backend: Backend;
  let dir: string;
  let scheduler: RunningProcess;
  let worker: RunningProcess;
  let consoleApp: RunningProcess;
  let api: Api;
  let browser: Browser;
  let page: Page;
  let needle: string;
  const pageErrors: string[] = [];
  const url = (path: string): string => `${consoleApp.url}${path}`;
  const rows = () => page.locator('tbody tr');
  const rowCount = (n: number, what: string) =>
    eventually(async () => ((await rows().count()) === n ? true : undefined), 30_000, what);

  beforeAll(async () => {
    mkdirSync(SHOTS, { recursive: true });
    backend = embeddedBackend();
    dir = mkdtempSync(join(tmpdir(), 'baton-console-search-'));
    scheduler = await startScheduler(backend);
    api = new Api(scheduler.url);
    worker = await startTemplateWorker('search-worker', scheduler.url, join(dir, 'runs.jsonl'));
    consoleApp = await startProcess('dist/apps/console/src/main.js', {
      CONSOLE_PORT: '0',
      BATON_SCHEDULER_URL: scheduler.url,
    });
    await api.waitForWorkers(1, 60_000);
    // The needle first: the 59 made after it fill the newest page of 50 ahead of it.
    needle = await api.create({
      create_info: {
        task_type: 'demo.echo',
        task_name: 'needle in the haystack',
        important_level: 0,
      },
    });
    const batch = Array.from({ length: 59 }, (_, i) => ({
      create_info: { task_type: 'demo.echo', task_name: `hay bale ${i}`, important_level: 5 },
    }));
    const made = await api.call('POST', '/v1/tasks/batch', { tasks: batch });
    expect(made.status).toBe(201);
    browser = await chromium.launch({
      executablePath: CHROMIUM,
      args: ['--disable-gpu', '--no-first-run', '--disable-background-networking'],
    });
    const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    page = await context.newPage();
    page.on('pageerror', (err) => pageErrors.push(`${page.url()}: ${err.message}`));
    await page.goto(url('/'));
    await page.getByLabel('API key').fill(ADMIN_KEY);
    await page.getByRole('button', { name: 'Open the console' }).click();
    await page.getByRole('heading', { level: 1, name: 'Overview' }).waitFor();
  });

  afterAll(async () => {
    await browser?.close();
    for (const p of [consoleApp, worker, scheduler]) await p?.stop();
    await backend?.cleanup();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('finds a task that is not on the first page by a word, its id and its name start', async () => {
    await page.goto(url('/tasks'));
    await rowCount(50, 'the first page of 50');
    expect(await page.getByRole('link', { name: 'needle in the haystack' }).count()).toBe(0);

    // A word of the name, typed: the server searches every task, not the page shown.
    await page.getByLabel('Name words or id').fill('HAYSTACK');
    await page.waitForURL(/\/tasks\?q=HAYSTACK$/);
    await page.getByRole('link', { name: 'needle in the haystack' }).waitFor();
    await rowCount(1, 'only the needle');

    // Too short to look for: said so, and nothing is asked of the server with it.
    await page.getByLabel('Name words or id').fill('ha');
    await page.getByText('type a word of 3 or more letters').waitFor();

    // Its id, and the start of its name, from an address opened afresh.
    await page.goto(url(`/tasks?q=${needle}`));
    await page.getByRole('link', { name: 'needle in the haystack' }).waitFor();
    await rowCount(1, 'the task of that id');
    await page.goto(url('/tasks?name_prefix=needle%20in'));
    await page.getByRole('link', { name: 'needle in the haystack' }).waitFor();
    await rowCount(1, 'the task whose name starts so');
    expect(await page.getByLabel('Name starts with').inputValue()).toBe('needle in');
  });

  it('keeps the order and the folded filters in the address', async () => {
    await page.goto(url('/tasks'));
    await rowCount(50, 'the first page');
    await page.getByLabel('Order').selectOption('created.asc');
    await page.waitForURL(/\/tasks\?order=asc$/);
    await eventually(
      async () =>
        (await rows().first().textContent())?.includes('needle in the haystack') ? true : undefined,
      30_000,
      'the oldest task first',
    );
    // The new order's first page answers late, as on a busy box: meanwhile the rows shown are the
    // last order's, and no next page is offered from its cursor (a run under load once clicked
    // one: the address's new order with the old order's cursor).
    let answer!: () => void;
    const held = new Promise<void>((resolve) => (answer = resolve));
    const priorityPage = /\/v1\/tasks\?.*sort=priority/;
    await page.route(priorityPage, async (route) => {
      await held;
      await route.continue();
    });
    await page.getByLabel('Order').selectOption('priority.asc');
    await page.waitForURL(
      (u) => u.searchParams.get('sort') === 'priority' && u.searchParams.get('order') === 'asc',
    );
    try {
      expect(await page.getByRole('link', { name: 'Next page' }).count()).toBe(0);
    } finally {
      // Answered now, and every later ask of this order at once.
      answer();
    }
    await page.getByRole('link', { name: 'Next page' }).click();
    await rowCount(10, 'the second page of 60, lowest priority first');
    expect(await page.getByRole('link', { name: 'needle in the haystack' }).count()).toBe(0);

    await page.goto(url(`/tasks?attempts_min=1&worker=search-worker&sort=priority`));
    expect(await page.getByLabel('Worker').inputValue()).toBe('search-worker');
    expect(await page.getByLabel('Order').inputValue()).toBe('priority.desc');
    await eventually(
      async () => ((await rows().count()) === 50 ? true : undefined),
      60_000,
      'tasks run by the worker',
    );
    await page.evaluate(AXE);
    const serious = await page.evaluate(async () => {
      const axe = (
        globalThis as unknown as {
          axe: { run(): Promise<{ violations: { id: string; impact: string | null }[] }> };
        }
      ).axe;
      return (await axe.run()).violations.filter(
        (v) => v.impact === 'serious' || v.impact === 'critical',
      );
    });
    expect(serious).toEqual([]);
    await page.screenshot({ path: join(SHOTS, 'tasks-search.png'), fullPage: true });
    expect(pageErrors).toEqual([]);
  });
});
