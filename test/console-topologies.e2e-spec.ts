import { join } from 'node:path';
import { Page } from 'playwright-core';
import { ADMIN_KEY, Api } from './support/baton';
import { ConsoleHarness, DESKTOP, PHONE, SHOTS } from './support/console-harness';
import { ROOT, RunningProcess, eventually } from './support/processes';

jest.setTimeout(240_000);

/** Waits for an end state: long, since a loaded two-core machine may be slow; never a measure. */
const SETTLE_MS = 90_000;

/** The example a user imports to try the run view (docs/console.md points to it). */
const EXAMPLE = join(ROOT, 'examples', 'topologies', 'console-demo.yaml');

interface RunNode {
  key: string;
  status: string;
  attempt: number | null;
  task_id: string | null;
  result: unknown;
  error: string | null;
}

interface Run {
  run_id: string;
  status: string;
  outcome: string | null;
  nodes: RunNode[];
}

/**
 * A definition with two mistakes, each on its node: `verify` names a task type no worker declared,
 * `report` depends on a node that does not exist. `fetch` is sound.
 */
const BAD_DEFINITION = `name: console-bad
nodes:
  - key: fetch
    task: { create_info: { task_type: demo.echo } }
  - key: verify
    depends_on: [fetch]
    task: { create_info: { task_type: demo.nowhere } }
  - key: report
    depends_on: [verify, audit]
    task: { create_info: { task_type: demo.echo } }
`;

/**
 * The topology pages as a person meets them, against the real scheduler, template worker and
 * console: import a definition (one refused, with its problem on the node; the example file,
 * accepted and saved), start a run, watch its nodes change colour as it moves, see a node fail,
 * retry the run from it and see it succeed; the run list's filters in the URL; axe and
 * screenshots of every topology page at desktop and phone width.
 */
/** The outermost elements that reach past the right edge of the page (why it scrolls sideways). */
function widerThanPage(page: Page): Promise<string[]> {
  return page.evaluate(() => {
    type El = {
      tagName: string;
      className: unknown;
      parentElement: El | null;
      getBoundingClientRect(): { right: number };
    };
    const doc = (
      globalThis as unknown as {
        document: { documentElement: { clientWidth: number }; querySelectorAll(s: string): El[] };
      }
    ).document;
    const edge = doc.documentElement.clientWidth + 1;
    const past = (e: El | null): boolean => !!e && e.getBoundingClientRect().right > edge;
    return [...doc.querySelectorAll('body *')]
      .filter((e) => past(e) && !past(e.parentElement))
      .slice(0, 5)
      .map((e) => `${e.tagName.toLowerCase()}.${String(e.className).split(' ').join('.')}`);
  });
}

describe('console topology pages in a browser', () => {
  let harness: ConsoleHarness;
  let consoleApp: RunningProcess;
  let api: Api;
  let page: Page;
  let runId: string;
  /** A run whose approval node waits, for the page checks at the end. */
  let waitingRunId: string;

  const url = (path: string): string => `${consoleApp.url}${path}`;
  const shot = (name: string): Promise<Buffer> =>
    page.screenshot({ path: join(SHOTS, `${name}.png`), fullPage: true });
  const heading = (name: string) => page.getByRole('heading', { level: 1, name, exact: true });
  /** A node box of the graph on the page. */
  const graphNode = (key: string) => page.locator(`.react-flow [data-node="${key}"]`);
  const run = async (id: string): Promise<Run> =>
    (await api.call<Run>('GET', `/v1/topology-runs/${id}`)).data;
  const node = (r: Run, key: string): RunNode => r.nodes.find((n) => n.key === key) as RunNode;
  const runSettled = (id: string, what: string, test: (r: Run) => boolean): Promise<Run> =>
    eventually(
      async () => {
        const r = await run(id);
        return test(r) ? r : undefined;
      },
      SETTLE_MS,
      `run ${id}: ${what}`,
    );

  beforeAll(async () => {
    harness = await ConsoleHarness.start('topology-console-worker');
    ({ consoleApp, api, page } = harness);
    await page.goto(url('/topologies'));
    await page.getByLabel('API key').fill(ADMIN_KEY);
    await page.getByRole('button', { name: 'Open the console' }).click();
    await heading('Topologies').waitFor();
  });

  afterAll(async () => {
    await harness?.stop();
  });

  it('shows the empty states before anything is saved or run', async () => {
    await page.getByText('No topology definitions yet.').waitFor();
    await page.goto(url('/topology-runs'));
    await heading('Topology runs').waitFor();
    await page.getByText('No runs yet.').waitFor();
    await page.goto(url('/topologies/nothing-here'));
    await page.getByText('No such topology').waitFor();
  });

  it('refuses a definition with two mistakes: each message on the node it names, nothing stored', async () => {
    await page.goto(url('/topologies'));
    await page.getByRole('link', { name: 'Import a definition' }).click();
    await heading('Import a topology').waitFor();

    // Text that is not YAML: a general problem, above the (absent) graph.
    await page.getByLabel('Or paste the definition (YAML or JSON)').fill('name: [unclosed');
    await page.getByRole('button', { name: 'Check', exact: true }).click();
    await page.getByRole('alert').filter({ hasText: 'not YAML or JSON' }).waitFor();

    await page.getByLabel('Or paste the definition (YAML or JSON)').fill(BAD_DEFINITION);
    await page.getByRole('button', { name: 'Check', exact: true }).click();
    const alert = page.getByRole('alert').filter({ hasText: 'refused this definition' });
    await alert.waitFor();
    const said = await alert.textContent();
    expect(said).toContain('2 problems');
    expect(said).toContain('node verify: task type demo.nowhere is not registered');
    expect(said).toContain('node report: depends_on names audit, which is not a node');
    // Each node at fault is marked, with its own message on it; the sound one is not.
    const verify = graphNode('verify');
    await verify.waitFor();
    expect(await verify.getAttribute('class')).toContain('node-invalid');
    expect(await verify.textContent()).toContain('task type demo.nowhere is not registered');
    const report = graphNode('report');
    expect(await report.getAttribute('class')).toContain('node-invalid');
    expect(await report.textContent()).toContain('depends_on names audit');
    expect(await graphNode('fetch').getAttribute('class')).not.toContain('node-invalid');
    const save = page.getByRole('button', { name: 'Save as a new version' });
    expect(await save.getAttribute('aria-disabled')).toBe('true');
    // Pressed anyway, it sends nothing: only what the scheduler accepted is saved.
    const saves: string[] = [];
    const onRequest = (r: { method(): string; url(): string }): void => {
      if (r.method() === 'POST' && r.url().endsWith('/api/v1/topologies')) saves.push(r.url());
    };
    page.on('request', onRequest);
    await save.click({ force: true });
    await page.getByRole('button', { name: 'Check', exact: true }).click();
    await alert.waitFor();
    page.off('request', onRequest);
    expect(saves).toEqual([]);
    await shot('topology-import-refused');
    expect(await harness.axeViolations()).toEqual([]);

    const stored = await api.call<unknown[]>('GET', '/v1/topologies');
    expect(stored.data).toEqual([]);
  });

  it('imports the example file: checked, saved as version 1, its graph drawn', async () => {
    await page.goto(url('/topology-import'));
    await heading('Import a topology').waitFor();
    await page.getByLabel('Definition file (YAML or JSON)').setInputFiles(EXAMPLE);
    await page
      .getByRole('status')
      .filter({ hasText: 'The scheduler accepts this definition (6 nodes)' })
      .waitFor();
    await shot('topology-import-valid');
    await page.getByRole('button', { name: 'Save as a new version' }).click();
    await page.waitForURL(/\/topologies\/console-demo\?version=1$/);
    await heading('console-demo').waitFor();
    for (const key of ['check', 'copy_east', 'copy_west', 'verify', 'publish', 'alert'])
      await graphNode(key).waitFor();
    const saved = await api.call<{ version: number; nodes: unknown[] }>(
      'GET',
      '/v1/topologies/console-demo',
    );
    expect(saved.data.version).toBe(1);
    expect(saved.data.nodes).toHaveLength(6);
  });

  it('starts a run and shows its nodes changing colour as it moves, until verify fails', async () => {
    await page.goto(url('/topologies/console-demo'));
    await heading('console-demo').waitFor();
    // The form says what the definition reads from its input.
    await page.getByText('this version reads input.fail_verify').waitFor();
    await page.getByLabel('Input (JSON)').fill('{"fail_verify": 1}');
    await page.getByRole('button', { name: 'Start run' }).click();
    await page.waitForURL(/\/topology-runs\/[0-9A-Z]{26}$/);
    runId = page.url().split('/').pop() as string;
    await heading('console-demo run').waitFor();

    // copy_west sleeps 6 s: the page shows it active (with progress), then succeeded, each with
    // its own colour and its status in words.
    const west = graphNode('copy_west');
    const seen = new Map<string, string>();
    await eventually(
      async () => {
        const status = await west.getAttribute('data-status');
        if (status && !seen.has(status))
          seen.set(
            status,
            await west.evaluate(
              (el) =>
                (
                  globalThis as unknown as {
                    getComputedStyle(e: unknown): { backgroundColor: string };
                  }
                ).getComputedStyle(el).backgroundColor,
            ),
          );
        if (status === 'ACTIVE' && !seen.has('shot')) {
          seen.set('shot', '');
          await shot('topology-run-moving');
        }
        return status === 'SUCCESS' ? true : undefined;
      },
      SETTLE_MS,
      'copy_west drawn as succeeded',
    );
    expect(seen.has('ACTIVE')).toBe(true);
    expect(seen.get('ACTIVE')).not.toBe(seen.get('SUCCESS'));
    expect(await west.textContent()).toContain('Succeeded');

    const failed = await runSettled(runId, 'failed at verify', (r) => r.outcome === 'FAIL');
    expect(node(failed, 'verify').status).toBe('FAILED');
    const verify = graphNode('verify');
    await page.locator('.react-flow [data-node="verify"][data-status="FAILED"]').waitFor();
    expect(await verify.textContent()).toContain('Failed');
    expect(await graphNode('publish').getAttribute('data-status')).toBe('UPSTREAM_FAILED');
    expect(await graphNode('publish').textContent()).toContain('Upstream failed');
    await page.getByText('FINISH · FAIL').first().waitFor();
    await shot('topology-run-failed');
  });

  it('retries the run from its failed node after a confirmation, and the run succeeds', async () => {
    const before = await run(runId);
    await page.getByRole('button', { name: 'Retry from failed' }).click();
    const dialog = page.getByRole('dialog', { name: 'Retry from failed?' });
    await dialog.waitFor();
    expect(await dialog.textContent()).toContain('succeeded nodes keep their results');
    await shot('topology-run-retry-confirm');
    await dialog.getByRole('button', { name: 'Retry from failed' }).click();
    await page.getByRole('status').filter({ hasText: 'Retry from failed: done.' }).waitFor();

    await page.locator('.react-flow [data-node="publish"][data-status="SUCCESS"]').waitFor({
      timeout: SETTLE_MS,
    });
    const after = await runSettled(runId, 'succeeded', (r) => r.outcome === 'SUCCESS');
    // Only the failed node ran again; the copies kept what they did.
    expect(node(after, 'verify').attempt).toBe(2);
    expect(node(after, 'copy_west').attempt).toBe(node(before, 'copy_west').attempt);
    expect(node(after, 'check').attempt).toBe(1);
    await page.getByText('FINISH · SUCCESS').first().waitFor();
    // A finished, succeeded run has nothing to retry: the button says why, the scheduler agrees.
    const retry = page.getByRole('button', { name: 'Retry from failed' });
    expect(await retry.getAttribute('aria-disabled')).toBe('true');
    expect(await retry.getAttribute('title')).toBe('the run succeeded: nothing failed to retry');
    expect((await api.call('POST', `/v1/topology-runs/${runId}/retry`)).status).toBe(409);
    await shot('topology-run-succeeded');

    // The timeline keeps what the retry replaced: both attempts of verify, the handler's run
    // before the retry (the handler now SKIPPED: the run succeeded), and the retry itself.
    const timeline = page.getByRole('region', { name: 'Timeline' });
    const lane = (key: string) => timeline.locator(`tr[data-lane="${key}"]`);
    await lane('verify').getByText('attempt 2 · Succeeded').waitFor({ timeout: SETTLE_MS });
    expect(await lane('verify').getByText('attempt 1 · Failed (replaced)').count()).toBe(1);
    expect(await lane('alert').getByText('attempt 1 · Succeeded (replaced)').count()).toBe(1);
    expect(await lane('alert').getByText('Skipped').count()).toBe(1);
    expect(await lane('publish').getByText('Upstream failed (replaced)').count()).toBe(1);
    expect(await lane('publish').getByText('attempt 1 · Succeeded').count()).toBe(1);
    expect(await lane('repairs').getByText('retry').count()).toBe(1);
    // In words too, in order: the first attempt of verify comes before the retry.
    await page.getByText(/Every entry, in order/).click();
    const words = await page.locator('.tl-list li').allTextContents();
    const first = words.findIndex((w) => /node verify attempt 1: Failed/.test(w));
    const retried = words.findIndex((w) => /retry of the run by key:/.test(w));
    const second = words.findIndex((w) => /node verify attempt 2: Succeeded/.test(w));
    expect(first).toBeGreaterThanOrEqual(0);
    expect(retried).toBeGreaterThan(first);
    expect(second).toBeGreaterThan(retried);
    await shot('topology-run-timeline');
  });

  it('shows the scheduler’s refusal of an action as it gave it', async () => {
    // A viewer may look but not act: the page offers the re-run, the scheduler refuses it.
    const made = await api.call<{ key: string }>('POST', '/v1/api-keys', {
      name: 'console-viewer',
      role: 'viewer',
    });
    expect(made.status).toBe(201);
    const context = await harness.browser.newContext({ viewport: DESKTOP, locale: 'en-US' });
    try {
      const viewer = await context.newPage();
      await viewer.goto(url(`/topology-runs/${runId}`));
      await viewer.getByLabel('API key').fill(made.data.key);
      await viewer.getByRole('button', { name: 'Open the console' }).click();
      await viewer.getByRole('heading', { level: 1, name: 'console-demo run' }).waitFor();
      const before = await run(runId);
      await viewer.getByRole('button', { name: 'Re-run verify' }).click();
      const dialog = viewer.getByRole('dialog', { name: 'Re-run node verify?' });
      expect(await dialog.textContent()).toContain('every node after it run again');
      await dialog.getByRole('button', { name: 'Re-run', exact: true }).click();
      const refusal = viewer
        .getByRole('alert')
        .filter({ hasText: 'Re-run verify: the scheduler refused' });
      await refusal.waitFor();
      const direct = await new Api(api.base, made.data.key).call(
        'POST',
        `/v1/topology-runs/${runId}/nodes/verify/rerun`,
      );
      expect(direct.status).toBe(403);
      expect(await refusal.textContent()).toContain(direct.message);
      await viewer.screenshot({ path: join(SHOTS, 'topology-run-refused.png'), fullPage: true });
      // Nothing moved.
      expect(node(await run(runId), 'verify').attempt).toBe(node(before, 'verify').attempt);
    } finally {
      await context.close();
    }
  });

  it('opens a node’s task from the graph, by keyboard and by a click on its box', async () => {
    await page.goto(url(`/topology-runs/${runId}`));
    await heading('console-demo run').waitFor();
    const r = await run(runId);
    await graphNode('verify').getByRole('link', { name: 'verify' }).waitFor();
    // From the top of the page, Tab reaches verify's link in the graph; Enter follows it.
    await page.locator('body').focus();
    let reached = false;
    for (let i = 0; i < 60 && !reached; i++) {
      await page.keyboard.press('Tab');
      reached = await page.evaluate(() => {
        const el = (
          globalThis as unknown as {
            document: {
              activeElement: { textContent: string | null; closest(s: string): unknown } | null;
            };
          }
        ).document.activeElement;
        return el?.textContent === 'verify' && el.closest('.react-flow') !== null;
      });
    }
    expect(reached).toBe(true);
    await page.keyboard.press('Enter');
    await page.waitForURL(new RegExp(`/tasks/${node(r, 'verify').task_id}$`));
    await page.getByRole('heading', { level: 2, name: 'Lifecycle' }).waitFor();

    // With a mouse, a click anywhere on a node's box opens its task too.
    await page.goBack();
    await heading('console-demo run').waitFor();
    await graphNode('copy_east').getByText('demo.sleep').click();
    await page.waitForURL(new RegExp(`/tasks/${node(r, 'copy_east').task_id}$`));
    await page.getByRole('heading', { level: 2, name: 'Lifecycle' }).waitFor();
  });

  it('lists runs with filters kept in the URL', async () => {
    await page.goto(url('/topology-runs'));
    await heading('Topology runs').waitFor();
    await page.getByLabel('Definition').selectOption('console-demo');
    await page.waitForURL(/\/topology-runs\?name=console-demo$/);
    await page.getByRole('link', { name: runId }).waitFor();
    await page.getByLabel('Outcome').selectOption('FAIL');
    await page.waitForURL(/\/topology-runs\?name=console-demo&outcome=FAIL$/);
    await page.getByText('No runs match these filters.').waitFor();
    // The same address opened afresh keeps the filters.
    await page.goto(url('/topology-runs?name=console-demo&outcome=SUCCESS'));
    expect(await page.getByLabel('Outcome').inputValue()).toBe('SUCCESS');
    await page.getByRole('link', { name: runId }).waitFor();
  });

  it('each topology page asks the API for little: the calls of one view', async () => {
    /** The distinct API calls a fresh view of `path` makes until `ready` shows and 1.5 s pass. */
    const callsOf = async (path: string, ready: string): Promise<string[]> => {
      const calls = new Set<string>();
      const onRequest = (r: { url(): string }): void => {
        const u = new URL(r.url());
        if (u.pathname.startsWith('/api/')) calls.add(`${u.pathname}${u.search}`);
      };
      await page.goto(url('/'));
      await heading('Overview').waitFor();
      page.on('request', onRequest);
      try {
        await page.goto(url(path));
        await heading(ready).waitFor();
        await page.waitForTimeout(1500);
      } finally {
        page.off('request', onRequest);
      }
      return [...calls].sort();
    };
    expect(await callsOf('/topologies', 'Topologies')).toEqual(['/api/v1/topologies']);
    expect(await callsOf('/topologies/console-demo', 'console-demo')).toEqual([
      '/api/v1/topologies/console-demo/versions',
    ]);
    expect(await callsOf('/topology-import', 'Import a topology')).toEqual([]);
    expect(await callsOf('/topology-runs', 'Topology runs')).toEqual([
      '/api/v1/topologies',
      '/api/v1/topology-runs?limit=50',
    ]);
    // A finished run: the run once (again every 30 s), its history once (read again with the
    // run), its definition's version once, and the live stream of its tasks (a retry from
    // elsewhere shows at once).
    expect(await callsOf(`/topology-runs/${runId}`, 'console-demo run')).toEqual([
      `/api/v1/task-changes/stream?control_task_id=${runId}`,
      '/api/v1/topologies/console-demo?version=1',
      `/api/v1/topology-runs/${runId}`,
      `/api/v1/topology-runs/${runId}/history`,
    ]);
  });

  it('approves from the run view and rejects from the Approvals page, each with its comment kept', async () => {
    expect(
      (
        await api.call('POST', '/v1/topologies', {
          name: 'console-approval',
          nodes: [
            {
              key: 'gate',
              approval: {
                message: 'Fail over {{input.cluster}}?',
                timeout_seconds: 3600,
                on_timeout: 'reject',
              },
            },
            {
              key: 'after',
              depends_on: ['gate'],
              task: { create_info: { task_type: 'demo.echo' } },
            },
          ],
        })
      ).status,
    ).toBe(201);
    const startRun = async (cluster: string): Promise<string> => {
      const r = await api.call<Run>('POST', '/v1/topologies/console-approval/runs', {
        input: { cluster },
      });
      await runSettled(r.data.run_id, 'waiting', (x) => node(x, 'gate').status === 'ACTIVE');
      return r.data.run_id;
    };
    const approved = await startRun('orders');
    const rejected = await startRun('billing');
    waitingRunId = await startRun('search');

    // From the run view: what it asks, then Approve with a comment after a confirmation.
    await page.goto(url(`/topology-runs/${approved}`));
    await heading('console-approval run').waitFor();
    const waiting = page.getByRole('region', { name: 'Waiting for a decision' });
    await waiting.getByText('Node gate asks: Fail over orders?').waitFor();
    await shot('topology-run-approval');
    await waiting.getByRole('button', { name: 'Approve gate' }).click();
    const dialog = page.getByRole('dialog', { name: 'Approve node gate?' });
    await dialog.waitFor();
    await dialog.getByLabel(/Comment/).fill('replica lag checked');
    await dialog.getByRole('button', { name: 'Approve', exact: true }).click();
    await page.getByRole('status').filter({ hasText: 'Approve gate: done.' }).waitFor();
    const a = await runSettled(approved, 'succeeded', (r) => r.outcome === 'SUCCESS');
    expect(node(a, 'gate').result).toMatchObject({
      decision: 'approved',
      by: expect.stringMatching(/^key:/),
      comment: 'replica lag checked',
    });
    // The timeline says who decided and why.
    await page.getByText(/Every entry, in order/).click();
    await page
      .locator('.tl-list li')
      .filter({ hasText: /node gate: Succeeded \(approved by key:.*: replica lag checked\)/ })
      .waitFor({ timeout: SETTLE_MS });

    // From the Approvals page: both waiting runs listed; Reject one with a comment.
    await page.goto(url('/approvals'));
    await heading('Approvals').waitFor();
    const row = page.locator(`tr[data-approval="${rejected}:gate"]`);
    await row.getByText('Fail over billing?').waitFor();
    expect(await page.locator(`tr[data-approval="${waitingRunId}:gate"]`).count()).toBe(1);
    expect(await page.locator(`tr[data-approval="${approved}:gate"]`).count()).toBe(0);
    await shot('approvals');
    await row.getByRole('button', { name: 'Reject gate' }).click();
    const confirm = page.getByRole('dialog', { name: 'Reject node gate?' });
    await confirm.getByLabel(/Comment/).fill('not during the sale');
    await confirm.getByRole('button', { name: 'Reject', exact: true }).click();
    await page.getByRole('status').filter({ hasText: 'Reject gate of run' }).waitFor();
    const r = await runSettled(rejected, 'failed', (x) => x.outcome === 'FAIL');
    expect(node(r, 'gate').error).toMatch(/^rejected by key:.*: not during the sale$/);
    expect(node(r, 'after').status).toBe('UPSTREAM_FAILED');
    await page.locator(`tr[data-approval="${rejected}:gate"]`).waitFor({ state: 'detached' });
  });

  it('cancels a run from its page: the finally-node still runs, and the timeline shows it after the cut', async () => {
    expect(
      (
        await api.call('POST', '/v1/topologies', {
          name: 'console-cancel',
          nodes: [
            {
              key: 'long',
              task: {
                create_info: { task_type: 'demo.sleep' },
                params: { seconds: 600, tick_ms: 200 },
              },
            },
            {
              key: 'after',
              depends_on: ['long'],
              task: { create_info: { task_type: 'demo.echo' } },
            },
            {
              key: 'cleanup',
              finally: true,
              task: {
                create_info: { task_type: 'demo.echo' },
                params: { outcome: '{{run.outcome}}' },
              },
            },
          ],
        })
      ).status,
    ).toBe(201);
    const started = await api.call<Run>('POST', '/v1/topologies/console-cancel/runs', {});
    const id = started.data.run_id;
    await runSettled(id, 'long under way', (r) => node(r, 'long').status === 'ACTIVE');
    await page.goto(url(`/topology-runs/${id}`));
    await heading('console-cancel run').waitFor();
    await page.getByRole('button', { name: 'Cancel run' }).click();
    const dialog = page.getByRole('dialog', { name: 'Cancel run?' });
    await dialog.getByRole('button', { name: 'Cancel run' }).click();
    const r = await runSettled(id, 'cancelled', (x) => x.status === 'FINISH');
    expect(r.outcome).toBe('CANCELLED');
    expect(node(r, 'cleanup')).toMatchObject({
      status: 'SUCCESS',
      result: { echo: { outcome: 'CANCELLED' } },
    });
    await page
      .locator('.react-flow [data-node="cleanup"][data-status="SUCCESS"]')
      .waitFor({ timeout: SETTLE_MS });
    expect(await graphNode('long').getAttribute('data-status')).toBe('CANCELLED');
    expect(await graphNode('after').getAttribute('data-status')).toBe('CANCELLED');
    const timeline = page.getByRole('region', { name: 'Timeline' });
    await timeline
      .locator('tr[data-lane="cleanup"]')
      .getByText('attempt 1 · Succeeded')
      .waitFor({ timeout: SETTLE_MS });
    // In words: the cut, then the finally-node's run.
    await page.getByText(/Every entry, in order/).click();
    const words = await page.locator('.tl-list li').allTextContents();
    const cut = words.findIndex((w) => /node long attempt 1: Cancelled/.test(w));
    const ran = words.findIndex((w) => /node cleanup \(finally\) attempt 1: Succeeded/.test(w));
    expect(cut).toBeGreaterThanOrEqual(0);
    expect(ran).toBeGreaterThan(cut);
    await shot('topology-run-cancelled-finally');
  });

  it('every topology page: no serious or critical axe violation, no sideways scroll on a phone, screenshots', async () => {
    const pages: [string, string, string][] = [
      ['topologies', '/topologies', 'Topologies'],
      ['topology-definition', '/topologies/console-demo?version=1', 'console-demo'],
      ['topology-import', '/topology-import', 'Import a topology'],
      ['topology-runs', '/topology-runs', 'Topology runs'],
      ['topology-run', `/topology-runs/${runId}`, 'console-demo run'],
      ['topology-run-waiting', `/topology-runs/${waitingRunId}`, 'console-approval run'],
      ['approvals', '/approvals', 'Approvals'],
    ];
    const problems: string[] = [];
    for (const [size, suffix] of [
      [DESKTOP, ''],
      [PHONE, '-phone'],
    ] as const) {
      await page.setViewportSize(size);
      for (const [name, path, title] of pages) {
        await page.goto(url(path));
        await heading(title).waitFor();
        await eventually(
          async () => ((await page.getByText(/^Loading/).count()) === 0 ? true : undefined),
          30_000,
          `${name}${suffix} loaded`,
        );
        for (const v of await harness.axeViolations())
          problems.push(
            `${name}${suffix}: ${v.impact} ${v.id} (${v.help}) at ${v.nodes.join(', ')}`,
          );
        const sideways = await harness.sideways();
        if (sideways > 1)
          problems.push(
            `${name}${suffix}: the page scrolls ${sideways} px sideways (${(await widerThanPage(page)).join(', ')})`,
          );
        await shot(`${name}${suffix}`);
      }
    }
    await page.setViewportSize(DESKTOP);
    expect(problems).toEqual([]);
    expect(harness.pageErrors).toEqual([]);
  });
});
