import { Page } from 'playwright-core';
import { request } from 'undici';
import { WORKER_CONTRACT_VERSION } from '../libs/task-contract/src/openapi/contract-changelog';
import { ADMIN_KEY, Api } from './support/baton';
import { ConsoleHarness, DESKTOP, PHONE } from './support/console-harness';
import { eventually } from './support/processes';
import { rawGet } from './support/raw-http';

jest.setTimeout(180_000);

/** Waits for an end state: long, since a loaded two-core machine may be slow; never a measure. */
const SETTLE_MS = 90_000;

interface Task {
  task_id: string;
  task_status: string;
  outcome: string | null;
  attempt: number;
  cancel_requested: boolean;
  progress: { percent: number } | null;
  params: Record<string, unknown>;
  labels: Record<string, string>;
}

/**
 * The console as its users meet it: the real scheduler (SQLite + memory queue), the template
 * worker and the console's own process, with Debian's Chromium driven by playwright-core. Each
 * test walks pages as a person would (a key pasted in, forms, buttons, confirmations) and checks
 * the outcome through the scheduler's API. Every page gets an axe check and screenshots at
 * desktop and phone width in .test-results/console/.
 */
describe('console in a browser', () => {
  let h: ConsoleHarness;
  let api: Api;
  let page: Page;

  const url = (path: string): string => h.url(path);
  const shot = (name: string): Promise<Buffer> => h.shot(name);
  const heading = (name: string) => h.heading(name);

  const createTask = async (body: Record<string, unknown>): Promise<string> => api.create(body);
  const task = async (id: string): Promise<Task> => (await api.task(id)) as unknown as Task;
  const settled = (id: string, what: string, test: (t: Task) => boolean): Promise<Task> =>
    eventually(
      async () => {
        const t = await task(id);
        return test(t) ? t : undefined;
      },
      SETTLE_MS,
      `task ${id}: ${what}`,
    );

  /** The serious and critical accessibility violations axe finds on the page as it is now. */
  const axeViolations = () => h.axeViolations();

  beforeAll(async () => {
    h = await ConsoleHarness.start('console-worker');
    ({ api, page } = h);
  });

  afterAll(async () => {
    await h?.stop();
  });

  it('passes /api/v1/* to the scheduler with the caller’s key, and adds none of its own', async () => {
    const anonymous = await request(url('/api/v1/tasks'));
    expect(anonymous.statusCode).toBe(401);
    expect(await anonymous.body.json()).toMatchObject({ code: 40100 });

    const withKey = await request(url('/api/v1/task-types'), {
      headers: { authorization: `Bearer ${ADMIN_KEY}` },
    });
    expect(withKey.statusCode).toBe(200);
    const types = (await withKey.body.json()) as { code: number; data: { task_type: string }[] };
    expect(types.data.map((t) => t.task_type)).toEqual(expect.arrayContaining(['demo.sleep']));

    const elsewhere = await request(url('/api/metrics'));
    expect(elsewhere.statusCode).toBe(404);
    expect(await elsewhere.body.json()).toMatchObject({ code: 40402 });
    // A way out of /api/v1/ sent as it is (curl --path-as-is): refused, the scheduler's
    // /metrics not read (apps/console/src/api-proxy.spec.ts tries the other spellings).
    const out = await rawGet(url('/'), '/api/v1/%2e%2e/%2e%2e/metrics');
    expect([out.status, JSON.parse(out.body)]).toEqual([
      400,
      { code: 40003, message: expect.any(String), data: null },
    ]);

    // Bad input reaches the scheduler and comes back in its envelope.
    const bad = await request(url('/api/v1/tasks'), {
      method: 'POST',
      headers: { authorization: `Bearer ${ADMIN_KEY}`, 'content-type': 'application/json' },
      body: '{"create_info":',
    });
    expect(bad.statusCode).toBe(400);
    expect(await bad.body.json()).toMatchObject({
      code: expect.any(Number),
      message: expect.any(String),
    });
  });

  it('asks for an API key, refuses a wrong one, and opens on a right one', async () => {
    await page.goto(url('/'));
    await heading('Baton console').waitFor();
    expect(await axeViolations()).toEqual([]);
    await shot('sign-in');
    await page.getByLabel('API key').fill('baton_not-a-key-of-this-scheduler-000');
    await page.getByRole('button', { name: 'Open the console' }).click();
    await page.getByRole('alert').filter({ hasText: 'refused this key' }).waitFor();

    await page.getByLabel('API key').fill(ADMIN_KEY);
    await page.getByRole('button', { name: 'Open the console' }).click();
    await heading('Overview').waitFor();
  });

  it('creates a task from the form and shows its progress bar reaching 100%', async () => {
    await page
      .getByRole('navigation', { name: 'Main' })
      .getByRole('link', { name: 'Tasks' })
      .click();
    await heading('Tasks').waitFor();
    await page.getByRole('link', { name: 'New task' }).click();
    await heading('New task').waitFor();
    await page.getByLabel('Type', { exact: true }).selectOption('demo.sleep');
    await page.getByLabel('Name', { exact: true }).fill('console sleeps');
    // The params are fields generated from demo.sleep's schema, its defaults filled in; a value
    // the schema refuses is named under its field with the schema's message, and nothing is made.
    const seconds = page.getByLabel('seconds', { exact: true });
    expect(await seconds.inputValue()).toBe('5');
    await page.getByText('how long to sleep').waitFor();
    await seconds.fill('7200');
    const made = (await api.call<{ items: unknown[] }>('GET', '/v1/tasks?task_type=demo.sleep'))
      .data.items.length;
    await page.getByRole('button', { name: 'Create task' }).click();
    await page.getByText('must be <= 3600').waitFor();
    expect(await seconds.getAttribute('aria-invalid')).toBe('true');
    await page.getByRole('alert').getByText('see the fields above').waitFor();
    expect(
      (await api.call<{ items: unknown[] }>('GET', '/v1/tasks?task_type=demo.sleep')).data.items,
    ).toHaveLength(made);
    // The JSON view shows the same params, and back.
    await page.getByRole('button', { name: 'Edit the params as JSON' }).click();
    expect(JSON.parse(await page.getByLabel('Params (JSON)').inputValue())).toEqual({
      seconds: 7200,
      tick_ms: 250,
    });
    await page.getByLabel('Params (JSON)').fill('{ "seconds": 6, "tick_ms": 250 }');
    await page.getByRole('button', { name: 'Edit the params as fields' }).click();
    expect(await seconds.inputValue()).toBe('6');
    await page.getByLabel('Labels (key=value, one a line)').fill('team=dba');
    await shot('new-task-filled');
    await page.getByRole('button', { name: 'Create task' }).click();

    await page.waitForURL(/\/tasks\/[0-9A-Z]{26}$/);
    const id = page.url().split('/').pop() as string;
    await heading('console sleeps').waitFor();
    const bar = page.getByRole('progressbar', { name: 'Progress', exact: true });
    // Some value below 100 first (the worker reports each tick), then 100.
    const seen = new Set<string>();
    await eventually(
      async () => {
        const value = (await bar.count()) ? await bar.getAttribute('value') : null;
        if (value !== null) seen.add(value);
        return value === '100' ? true : undefined;
      },
      SETTLE_MS,
      'the progress bar at 100',
    );
    expect([...seen].some((v) => Number(v) > 0 && Number(v) < 100)).toBe(true);
    const done = await settled(id, 'finished', (t) => t.task_status === 'FINISH');
    expect(done.outcome).toBe('SUCCESS');
    expect([done.params, done.labels]).toEqual([{ seconds: 6, tick_ms: 250 }, { team: 'dba' }]);
    await page.getByText('FINISH · SUCCESS').first().waitFor();
    // The lifecycle timeline lists the moves the API lists.
    const events = await api.call<unknown[]>('GET', `/v1/tasks/${id}/events`);
    await eventually(
      async () =>
        (await page.locator('ol.timeline > li').count()) === events.data.length ? true : undefined,
      30_000,
      'the timeline showing every transition',
    );
    await page.getByText('No webhook or callback message about this task.').waitFor();
    await page.locator('summary', { hasText: 'Params' }).click();
    await shot('task-detail-finished');
  });

  it('cancels a running task from its page; actions it does not allow say why', async () => {
    const id = await createTask({
      create_info: { task_type: 'demo.sleep', task_name: 'console cancel' },
      params: { seconds: 120, tick_ms: 500 },
    });
    await settled(id, 'running', (t) => t.task_status === 'RUNNING');
    await page.goto(url(`/tasks/${id}`));
    await heading('console cancel').waitFor();

    const resume = page.getByRole('button', { name: 'Continue', exact: true });
    expect(await resume.getAttribute('aria-disabled')).toBe('true');
    expect(await resume.getAttribute('title')).toBe('only a paused task can be continued');

    await page.getByRole('button', { name: 'Cancel', exact: true }).click();
    const dialog = page.getByRole('dialog', { name: 'Cancel this task?' });
    await dialog.waitFor();
    // The confirmation says what will happen, not only the status it is in.
    await dialog.getByText('Its worker is told to stop the run').waitFor();
    await shot('task-cancel-confirm');
    await dialog.getByRole('button', { name: 'Cancel', exact: true }).click();

    const ended = await settled(
      id,
      'cancelled and finished',
      (t) => t.task_status === 'FINISH' && t.outcome === 'CANCELLED',
    );
    expect(ended.cancel_requested).toBe(true);
    await page.getByText('FINISH · CANCELLED').first().waitFor({ timeout: 30_000 });
    // What the cancel came to, not "stopping" any more.
    await page.getByText('The task was cancelled.').waitFor({ timeout: 30_000 });
    expect(await page.getByText('the task is stopping').count()).toBe(0);
  });

  it('follows a task through the live stream, not only by polling', async () => {
    // A task that waits an hour: its page polls it every 30 s while the stream is connected.
    const id = await createTask({
      create_info: { task_type: 'demo.echo', task_name: 'console live' },
      process_arg: { start_time: new Date(Date.now() + 3_600_000).toISOString() },
    });
    const streams: string[] = [];
    const onResponse = (r: {
      url(): string;
      status(): number;
      headers(): Record<string, string>;
    }) => {
      const live = String(r.headers()['content-type']).startsWith('text/event-stream');
      if (r.url().includes('/api/v1/task-changes/stream') && r.status() === 200 && live)
        streams.push(r.url());
    };
    page.on('response', onResponse);
    try {
      await page.goto(url(`/tasks/${id}`));
      await heading('console live').waitFor();
      await eventually(
        async () => (streams.some((u) => u.includes(`task_id=${id}`)) ? true : undefined),
        30_000,
        'the live stream for the task, open through the console',
      );
      const before = (await task(id)).task_status;
      expect(before).not.toBe('FINISH');
      await api.call('POST', `/v1/tasks/${id}/cancel`, {});
      await settled(id, 'cancelled', (t) => t.task_status === 'FINISH');
      // Told by the stream: well before the 30 s poll would have read it again.
      await page.getByText('FINISH · CANCELLED').first().waitFor({ timeout: 20_000 });
    } finally {
      page.off('response', onResponse);
    }
  });

  it('retries three failed tasks at once from the list, after a confirmation saying how many', async () => {
    const ids: string[] = [];
    for (let i = 1; i <= 3; i++) {
      ids.push(
        await createTask({
          create_info: { task_type: 'demo.flaky', task_name: `bulk-retry ${i}` },
          process_arg: { max_retry: 0 },
          params: { fail_times: 1 },
        }),
      );
    }
    for (const id of ids)
      await settled(
        id,
        'failed and finished',
        (t) => t.task_status === 'FINISH' && t.outcome === 'FAIL',
      );

    await page.goto(url('/tasks?task_type=demo.flaky&q=bulk-retry'));
    await heading('Tasks').waitFor();
    await eventually(
      async () => ((await page.locator('tbody tr').count()) === 3 ? true : undefined),
      30_000,
      'three failed tasks listed',
    );
    await page.getByLabel('Select all 3 tasks shown').check();
    await page.getByRole('button', { name: 'Retry (3)' }).click();
    const dialog = page.getByRole('dialog', { name: 'Retry 3 tasks?' });
    await dialog.waitFor();
    expect(await dialog.textContent()).toContain('3 tasks will be run again');
    await shot('tasks-bulk-confirm');
    await dialog.getByRole('button', { name: 'Retry 3' }).click();
    await page.getByRole('status').filter({ hasText: 'Retry: 3 of 3 tasks done.' }).waitFor();

    for (const id of ids) {
      const t = await settled(id, 'run again and succeeded', (x) => x.outcome === 'SUCCESS');
      expect(t.attempt).toBe(2);
    }
    await eventually(
      async () => ((await page.getByText('FINISH · SUCCESS').count()) === 3 ? true : undefined),
      30_000,
      'the list showing the three succeeded',
    );
  });

  it('keeps filters in the URL, and the list answers the keyboard', async () => {
    await page.goto(url('/tasks'));
    await heading('Tasks').waitFor();
    await page.getByLabel('Status', { exact: true }).selectOption('FINISH');
    await page.waitForURL(/\/tasks\?status=FINISH$/);
    // The same address, opened afresh, shows the same filter.
    await page.goto(url('/tasks?status=FINISH&task_type=demo.sleep'));
    expect(await page.getByLabel('Status', { exact: true }).inputValue()).toBe('FINISH');
    expect(await page.getByLabel('Type', { exact: true }).inputValue()).toBe('demo.sleep');
    await page.getByRole('link', { name: 'console sleeps' }).waitFor();
    await page.getByLabel('Outcome', { exact: true }).selectOption('CANCELLED');
    await page.waitForURL(/\/tasks\?status=FINISH&task_type=demo\.sleep&outcome=CANCELLED$/);
    // The rows of the filter before stay while the new ones load (marked busy), then go.
    await page.locator('[aria-label="Task list"][aria-busy="false"]').waitFor();
    await page.getByRole('link', { name: 'console cancel' }).waitFor();
    expect(await page.getByRole('link', { name: 'console sleeps' }).count()).toBe(0);

    // From the top of the page, Tab reaches the "select all" box; Space ticks it.
    await page.locator('body').focus();
    let reached = false;
    for (let i = 0; i < 40 && !reached; i++) {
      await page.keyboard.press('Tab');
      reached = await page.evaluate(
        () =>
          (
            globalThis as unknown as { document: { activeElement: { ariaLabel: string | null } } }
          ).document.activeElement?.ariaLabel?.startsWith('Select all') ?? false,
      );
    }
    expect(reached).toBe(true);
    await page.keyboard.press('Space');
    await page.getByText(/^[1-9]\d* selected$/).waitFor();
  });

  it('filters the list by tenant, label and creation time, kept in the URL', async () => {
    const labelled = await createTask({
      create_info: { task_type: 'demo.echo', task_name: 'console labelled' },
      params: { n: 1 },
      tenant: 'console-team',
      labels: { team: 'console-dba' },
    });
    await createTask({
      create_info: { task_type: 'demo.echo', task_name: 'console unlabelled' },
      params: { n: 1 },
    });
    await page.goto(url('/tasks'));
    await heading('Tasks').waitFor();
    await page.getByText('More filters').click();
    await page.getByLabel('Label', { exact: true }).fill('team:console-dba');
    await page.waitForURL(/label=team%3Aconsole-dba/);
    // The unfiltered rows stay until the filtered answer replaces them.
    await page.getByRole('link', { name: 'console unlabelled' }).waitFor({ state: 'detached' });
    await page.getByRole('link', { name: 'console labelled' }).waitFor();
    // The same address opened afresh: the filter is there, folded open.
    await page.goto(url('/tasks?tenant=console-team'));
    expect(await page.getByLabel('Tenant', { exact: true }).inputValue()).toBe('console-team');
    await page.getByRole('link', { name: 'console labelled' }).waitFor();
    expect(await page.getByRole('link', { name: 'console unlabelled' }).count()).toBe(0);
    // Created before a time long past: the task is not listed; the time goes to the URL in UTC.
    await page.getByLabel('Created before', { exact: true }).fill('2020-01-01T00:00');
    await page.waitForURL(/created_to=2020-01-0\dT\d\d%3A00%3A00\.000Z/);
    await page
      .getByText(/No tasks/i)
      .first()
      .waitFor();
    expect((await task(labelled)).task_id).toBe(labelled);
  });

  it('shows counts by status and type on the overview, finished ones by outcome, linking to the filtered list', async () => {
    await page.goto(url('/'));
    await heading('Overview').waitFor();
    const counts = await api.call<
      { task_type: string; status: string; outcome: string | null; count: number }[]
    >('GET', '/v1/task-counts');
    // The sleep made from the form succeeded, the one cancelled from its page did not: FINISH
    // comes once per outcome.
    const finishedSleeps = counts.data.filter(
      (c) => c.task_type === 'demo.sleep' && c.status === 'FINISH',
    );
    expect(finishedSleeps).toEqual(
      expect.arrayContaining([
        { task_type: 'demo.sleep', status: 'FINISH', outcome: 'SUCCESS', count: 1 },
        { task_type: 'demo.sleep', status: 'FINISH', outcome: 'CANCELLED', count: 1 },
      ]),
    );
    expect(counts.data.filter((c) => c.status !== 'FINISH' && c.outcome !== null)).toEqual([]);
    // The three flaky tasks failed, then were retried and succeeded: a re-run takes a task out of
    // the outcome it had.
    expect(counts.data.filter((c) => c.task_type === 'demo.flaky')).toEqual([
      { task_type: 'demo.flaky', status: 'FINISH', outcome: 'SUCCESS', count: 3 },
    ]);
    await page.getByRole('columnheader', { name: 'FINISH · SUCCESS' }).waitFor();
    const cell = page.getByRole('link', { name: '1 demo.sleep tasks in FINISH · CANCELLED' });
    await cell.waitFor();
    await cell.click();
    await page.waitForURL(/\/tasks\?task_type=demo\.sleep&status=FINISH&outcome=CANCELLED$/);
    await heading('Tasks').waitFor();
    await page.getByText('console cancel', { exact: true }).first().waitFor();
  });

  it('lists workers with version and health; drains one, blacklists it with a reason, lifts both', async () => {
    await page.goto(url('/workers'));
    await heading('Workers').waitFor();
    const row = page.getByRole('row').filter({ hasText: 'console-worker' });
    await row.getByText('healthy').waitFor();
    // The worker contract it speaks, as it registered.
    await row.getByText(`contract ${WORKER_CONTRACT_VERSION}`).waitFor();
    // A drain asks first, and says what it will do: here the only worker of its types.
    await row.getByRole('button', { name: 'Drain…' }).click();
    const drain = page.getByRole('dialog', { name: 'Drain console-worker?' });
    await drain.getByText('It will take no new tasks').waitFor();
    await drain.getByText(/No other healthy worker serves .*demo\.sleep/).waitFor();
    await drain.getByRole('button', { name: 'Drain', exact: true }).click();
    await row.getByText('draining since').waitFor();
    const drained = await api.call<{ worker_id: string; draining: boolean }[]>(
      'GET',
      '/v1/workers',
    );
    expect(drained.data.find((w) => w.worker_id === 'console-worker')?.draining).toBe(true);
    await shot('workers-draining');
    await row.getByRole('button', { name: 'Undrain', exact: true }).click();
    await row.getByRole('button', { name: 'Drain…' }).waitFor();

    await row.getByRole('button', { name: 'Blacklist…' }).click();
    const dialog = page.getByRole('dialog', { name: 'Blacklist console-worker?' });
    await dialog.getByLabel('Reason (kept with the blacklist)').fill('disk errors on /dev/sdb');
    // With an end: it lifts by itself then (the field is the browser's local time).
    await dialog
      .getByLabel('Until (optional; empty: until lifted by hand)')
      .fill('2099-01-02T03:04');
    await dialog.getByText('No new tasks go to it until then').waitFor();
    await dialog.getByRole('button', { name: 'Blacklist', exact: true }).click();
    await row.getByText('blacklisted: disk errors on /dev/sdb').waitFor();
    await row.getByText(/until/).waitFor();
    const listed = await api.call<
      { worker_id: string; blacklist: { reason: string; until: string | null } | null }[]
    >('GET', '/v1/workers');
    const blacklist = listed.data.find((w) => w.worker_id === 'console-worker')?.blacklist;
    expect(blacklist?.reason).toBe('disk errors on /dev/sdb');
    const local = await page.evaluate(() => new Date('2099-01-02T03:04').toISOString());
    expect(blacklist?.until).toBe(local);
    await row.getByRole('button', { name: 'Lift blacklist' }).click();
    await row.getByRole('button', { name: 'Blacklist…' }).waitFor();
  });

  it('lists timers with their next fire, and disables one', async () => {
    const made = await api.call<{ timer_id: string }>('POST', '/v1/timers', {
      name: 'console hourly echo',
      schedule: { kind: 'interval', every_ms: 3_600_000 },
      task: { create_info: { task_type: 'demo.echo', task_name: 'from a timer' } },
    });
    expect(made.status).toBe(201);
    await page.goto(url('/timers'));
    await heading('Timers').waitFor();
    const row = page.getByRole('row').filter({ hasText: 'console hourly echo' });
    await row.getByText('every 3,600 s').waitFor();
    await row.getByRole('button', { name: 'Disable console hourly echo' }).click();
    await row.getByText('disabled', { exact: true }).waitFor();
    const timer = await api.call<{ enabled: boolean }>('GET', `/v1/timers/${made.data.timer_id}`);
    expect(timer.data.enabled).toBe(false);
  });

  it('lists log rules with what they make, and disables one', async () => {
    const made = await api.call<{ rule_id: string }>('POST', '/v1/log-rules', {
      name: 'console disk full',
      sources: ['http:*'],
      match: { regex: 'disk full on (?<host>[\\w.-]+)' },
      template: {
        create_info: { task_type: 'demo.echo', task_name: 'clean {{host}}' },
        params: { host: '{{host}}' },
      },
    });
    expect(made.status).toBe(201);
    await page.goto(url('/log-rules'));
    await heading('Log rules').waitFor();
    const card = page.getByRole('listitem').filter({ hasText: 'console disk full' });
    await card.getByText('demo.echo', { exact: true }).waitFor();
    await card.getByRole('button', { name: 'Disable console disk full' }).click();
    await card.getByText('disabled', { exact: true }).waitFor();
    const rule = await api.call<{ enabled: boolean }>('GET', `/v1/log-rules/${made.data.rule_id}`);
    expect(rule.data.enabled).toBe(false);
  });

  it('every page: no serious or critical axe violation, no sideways scroll on a phone, screenshots', async () => {
    const anyTask = (await api.call<{ items: { task_id: string }[] }>('GET', '/v1/tasks?limit=1'))
      .data.items[0].task_id;
    const pages: [string, string, string][] = [
      ['overview', '/', 'Overview'],
      ['tasks', '/tasks', 'Tasks'],
      ['task-detail', `/tasks/${anyTask}`, ''],
      ['new-task', '/tasks/new', 'New task'],
      ['workers', '/workers', 'Workers'],
      ['timers', '/timers', 'Timers'],
      ['log-rules', '/log-rules', 'Log rules'],
      ['not-found', '/tasks/new/nowhere', 'Not found'],
    ];
    const problems: string[] = [];
    for (const [width, suffix] of [
      [DESKTOP, ''],
      [PHONE, '-phone'],
    ] as const) {
      await page.setViewportSize(width);
      for (const [name, path, title] of pages) {
        await page.goto(url(path));
        if (title) await heading(title).waitFor();
        else await page.getByRole('heading', { level: 2, name: 'Lifecycle' }).waitFor();
        await eventually(
          async () => ((await page.getByText(/^Loading/).count()) === 0 ? true : undefined),
          30_000,
          `${name}${suffix} loaded`,
        );
        for (const v of await axeViolations())
          problems.push(
            `${name}${suffix}: ${v.impact} ${v.id} (${v.help}) at ${v.nodes.join(', ')}`,
          );
        const sideways = await h.sideways();
        if (sideways > 1)
          problems.push(`${name}${suffix}: the page scrolls ${sideways} px sideways`);
        await shot(`${name}${suffix}`);
      }
    }
    await page.setViewportSize(DESKTOP);
    expect(problems).toEqual([]);
    expect(h.pageErrors).toEqual([]);
  });
});
