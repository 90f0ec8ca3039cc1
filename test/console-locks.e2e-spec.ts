import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
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

/** Debian's Chromium (scripts/services.sh installs it); nothing here downloads a browser. */
const CHROMIUM = '/usr/bin/chromium';
const SHOTS = join(ROOT, '.test-results', 'console');
const AXE = readFileSync(require.resolve('axe-core/axe.min.js'), 'utf8');
/** Waits for end states: long, since a loaded two-core machine may be slow; never a measure. */
const SETTLE_MS = 90_000;
const INSTANCE = 'console-locks-1';

interface TaskLock {
  key: string;
  held: boolean;
  holder: string | null;
  held_by_this_task: boolean;
  fence: number | null;
  expires_at: string | null;
}

/**
 * The task page's "Locks" section in a real browser, against the real scheduler, template worker
 * and console: who holds each lock key (this task, or a link to the task that does), the fence
 * and the end of the lease, following the task as it moves; no section for a task without keys.
 */
describe('console: the locks of a task', () => {
  let backend: Backend;
  let dir: string;
  let scheduler: RunningProcess;
  let worker: RunningProcess;
  let consoleApp: RunningProcess;
  let api: Api;
  let browser: Browser;
  let page: Page;
  const pageErrors: string[] = [];
  const run = Date.now().toString(36);

  const url = (path: string): string => `${consoleApp.url}${path}`;
  const locks = async (id: string): Promise<TaskLock[]> =>
    (await api.call<TaskLock[]>('GET', `/v1/tasks/${id}/locks`)).data;
  const until = (id: string, what: string, test: (t: Record<string, unknown>) => boolean) =>
    eventually(
      async () => {
        const t = await api.task(id);
        return test(t) ? t : undefined;
      },
      SETTLE_MS,
      `task ${id}: ${what}`,
    );
  const lockRow = (key: string) =>
    page
      .getByRole('region', { name: 'Locks' })
      .getByRole('row')
      .filter({ has: page.getByRole('cell', { name: key, exact: true }) });

  beforeAll(async () => {
    if (!existsSync(CHROMIUM))
      throw new Error(`${CHROMIUM} is missing: run \`bash scripts/services.sh\` (it installs it)`);
    if (!existsSync(join(ROOT, 'dist', 'console-ui', 'index.html')))
      throw new Error('the console is not built: run `npm run build:console` (npm test does)');
    mkdirSync(SHOTS, { recursive: true });
    backend = embeddedBackend();
    dir = mkdtempSync(join(tmpdir(), 'baton-console-locks-'));
    scheduler = await startScheduler(backend, { BATON_INSTANCE_ID: INSTANCE });
    api = new Api(scheduler.url);
    worker = await startTemplateWorker('locks-ui-worker', scheduler.url, join(dir, 'runs.jsonl'));
    consoleApp = await startProcess('dist/apps/console/src/main.js', {
      CONSOLE_PORT: '0',
      BATON_SCHEDULER_URL: scheduler.url,
    });
    await api.waitForWorkers(1, 60_000);
    browser = await chromium.launch({
      executablePath: CHROMIUM,
      args: [
        '--disable-gpu',
        '--disable-quic',
        '--no-first-run',
        '--disable-background-networking',
        '--disable-component-update',
        '--disable-sync',
      ],
    });
    const context = await browser.newContext({
      viewport: { width: 1280, height: 900 },
      locale: 'en-US',
    });
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

  it('shows who holds each key, with fence and lease end, and follows the task as the key passes on', async () => {
    const key = `db-${run}`;
    const first = await api.create({
      create_info: { task_type: 'demo.sleep', task_name: 'ui holds the key' },
      // Long: it lets go of the key when the test cancels it, not on a clock.
      params: { seconds: 120, tick_ms: 500 },
      lock_keys: [key],
    });
    await until(first, 'running', (t) => t.task_status === 'RUNNING');
    const [held] = await locks(first);
    expect(held).toMatchObject({ held: true, held_by_this_task: true });

    await page.goto(url(`/tasks/${first}`));
    await page.getByRole('heading', { level: 2, name: 'Locks' }).waitFor();
    const row = lockRow(key);
    await row.getByText('this task').waitFor();
    await row.getByText(`on scheduler ${INSTANCE}`).waitFor();
    await row.getByRole('cell', { name: String(held.fence), exact: true }).waitFor();
    // The lease's end, in the browser's zone, with the UTC value on hover.
    expect(await row.locator('time').getAttribute('title')).toMatch(/ UTC$/);

    // A second task on the same key waits, and its page names and links the holder.
    const second = await api.create({
      create_info: { task_type: 'demo.sleep', task_name: 'ui waits for the key' },
      // Long enough for the open page (read every second) to see it holding the key.
      params: { seconds: 6, tick_ms: 250 },
      lock_keys: [key],
    });
    await eventually(
      async () =>
        (await api.events(second)).some((e) => /lock key held/.test(e.reason)) ? true : undefined,
      SETTLE_MS,
      'the second task waiting for the key',
    );
    await page.goto(url(`/tasks/${second}`));
    const waiting = lockRow(key);
    const link = waiting.getByRole('link', { name: `task ${first}` });
    await link.waitFor();
    // Why it waits, at the top of its page: the reason and the holder, told once.
    const why = page.getByRole('status', { name: 'Why it waits' });
    await why.waitFor();
    expect(await why.textContent()).toMatch(
      new RegExp(
        `^Waiting: lock key held by task ${first}: ${key}, since .+; checked \\d+ times?, last .+\\.$`,
      ),
    );
    await waiting.getByRole('cell', { name: String(held.fence), exact: true }).waitFor();
    expect(await waiting.getByText('this task').count()).toBe(0);
    await page.locator('[aria-busy="true"], .state[role="status"]').first().waitFor({
      state: 'detached',
      timeout: 30_000,
    });
    expect(await axeViolations(page)).toEqual([]);
    await page.screenshot({ path: join(SHOTS, 'task-locks-waiting.png'), fullPage: true });
    // On a phone the table scrolls inside its own box, not the page.
    await page.setViewportSize({ width: 390, height: 844 });
    expect(await axeViolations(page)).toEqual([]);
    const sideways = await page.evaluate(() => {
      const d = (
        globalThis as unknown as {
          document: { documentElement: { scrollWidth: number; clientWidth: number } };
        }
      ).document.documentElement;
      return d.scrollWidth - d.clientWidth;
    });
    expect(sideways).toBeLessThanOrEqual(1);
    await page.screenshot({ path: join(SHOTS, 'task-locks-waiting-phone.png'), fullPage: true });
    await page.setViewportSize({ width: 1280, height: 900 });
    // The link leads to the holder's own page.
    await link.click();
    await page.getByRole('heading', { level: 1, name: 'ui holds the key' }).waitFor();
    await page.goBack();
    await waiting.getByRole('link', { name: `task ${first}` }).waitFor();

    // Left open, the page follows: the first ends, the second takes the key (a higher fence)...
    const cancelled = await api.call('POST', `/v1/tasks/${first}/cancel`, {});
    expect(cancelled.status).toBe(200);
    await waiting.getByText('this task').waitFor({ timeout: SETTLE_MS });
    const [taken] = await locks(second);
    expect(taken.fence).toBeGreaterThan(held.fence!);
    await waiting.getByRole('cell', { name: String(taken.fence), exact: true }).waitFor();
    // ... and frees it when it is done.
    await until(second, 'finished', (t) => t.task_status === 'FINISH');
    await waiting.getByText('free', { exact: true }).waitFor({ timeout: 30_000 });
    await page.screenshot({ path: join(SHOTS, 'task-locks-free.png'), fullPage: true });

    const echo = await api.create({
      create_info: { task_type: 'demo.echo', task_name: 'no keys' },
    });
    await page.goto(url(`/tasks/${echo}`));
    await page.getByRole('heading', { level: 2, name: 'Lifecycle' }).waitFor();
    expect(await page.getByRole('heading', { level: 2, name: 'Locks' }).count()).toBe(0);
    expect(pageErrors).toEqual([]);
  });

  // Last: it kills the worker.
  it('shows what the worker logs while the task runs, and keeps it once the worker is killed', async () => {
    const id = await api.create({
      create_info: { task_type: 'demo.sleep', task_name: 'ui logs live' },
      // Long enough to be seen running: the page shows lines as they come.
      params: { seconds: 600, tick_ms: 250 },
    });
    await until(id, 'running', (t) => t.task_status === 'RUNNING');
    await page.goto(url(`/tasks/${id}`));
    const log = page.getByRole('list', { name: 'Log of attempt 1' });
    await log.getByText('sleeping 600 s in ticks of 250 ms').waitFor({ timeout: SETTLE_MS });
    // Live: a tick logged after the page opened shows up without a reload.
    const seen = await log.getByRole('listitem').count();
    await eventually(
      async () => ((await log.getByRole('listitem').count()) > seen + 2 ? true : undefined),
      SETTLE_MS,
      'new lines on the open page',
    );
    expect((await api.task(id)).task_status).toBe('RUNNING');
    await page.screenshot({ path: join(SHOTS, 'task-log-live.png'), fullPage: true });
    // Filters: warn and above hides the ticks; words find one.
    await page.getByLabel('Level').selectOption('warn');
    await page.getByText('The worker has logged nothing in attempt 1.').waitFor();
    await page.getByLabel('Level').selectOption('debug');
    await page.getByLabel('Search').fill('tick 2:');
    await log.getByText('tick 2: slept 500 of 600000 ms').waitFor();
    expect(await log.getByRole('listitem').count()).toBe(1);
    await page.getByLabel('Search').fill('');

    // The worker dies; what it logged stays, on a page opened afresh.
    const before = (
      await api.call<{ items: unknown[] }>('GET', `/v1/tasks/${id}/attempts/1/logs?limit=1000`)
    ).data.items.length;
    await worker.kill9();
    await page.reload();
    await page
      .getByRole('list', { name: 'Log of attempt 1' })
      .getByText('sleeping 600 s in ticks of 250 ms')
      .waitFor({ timeout: SETTLE_MS });
    const after = (
      await api.call<{ items: unknown[] }>('GET', `/v1/tasks/${id}/attempts/1/logs?limit=1000`)
    ).data.items.length;
    expect(after).toBeGreaterThanOrEqual(before);
    expect(await axeViolations(page)).toEqual([]);
    expect(pageErrors).toEqual([]);
  });
});

/** The serious and critical accessibility violations axe finds on the page as it is now. */
async function axeViolations(page: Page): Promise<string[]> {
  await page.evaluate(AXE);
  const found = await page.evaluate(async () => {
    type AxeResult = { violations: { id: string; impact: string | null; help: string }[] };
    const axe = (globalThis as unknown as { axe: { run(): Promise<AxeResult> } }).axe;
    return (await axe.run()).violations.map((v) => ({ id: v.id, impact: v.impact, help: v.help }));
  });
  return found
    .filter((v) => v.impact === 'serious' || v.impact === 'critical')
    .map((v) => `${v.impact} ${v.id}: ${v.help}`);
}
