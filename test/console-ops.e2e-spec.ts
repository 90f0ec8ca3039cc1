import { Page } from 'playwright-core';
import { ADMIN_KEY, Api } from './support/baton';
import { ConsoleHarness, DESKTOP, PHONE } from './support/console-harness';
import { eventually } from './support/processes';
import { Receiver } from './support/webhooks';

jest.setTimeout(240_000);

/** Waits for an end state: long, since a loaded two-core machine may be slow; never a measure. */
const SETTLE_MS = 90_000;

/**
 * The console's operations pages in a real browser, against the real scheduler, template worker
 * and console (ConsoleHarness): the overview's chart of finished tasks, a timer made with its
 * cron previewed by the scheduler, a log rule tried on lines and saved, and a webhook subscription
 * to a real receiver, its delivery log and a redelivery. Each page is checked with axe and
 * photographed into .test-results/console/.
 */
describe('console operations pages in a browser', () => {
  let h: ConsoleHarness;
  let page: Page;
  let api: Api;
  let receiver: Receiver;

  const expectAccessible = async (): Promise<void> => {
    expect(await h.axeViolations()).toEqual([]);
  };

  beforeAll(async () => {
    receiver = await Receiver.start();
    h = await ConsoleHarness.start('console-ops-worker', { BATON_WEBHOOK_ALLOW: 'localhost' });
    page = h.page;
    api = h.api;
    await page.goto(h.url('/'));
    await page.getByLabel('API key').fill(ADMIN_KEY);
    await page.getByRole('button', { name: 'Open the console' }).click();
    await h.heading('Overview').waitFor();
  });

  afterAll(async () => {
    if (h?.pageErrors.length) console.log(`script errors:\n${h.pageErrors.join('\n')}`);
    await h?.stop();
    await receiver?.proc.stop();
  });

  it('charts the tasks finished in the last hour by outcome, and lists the failures', async () => {
    const ids = await Promise.all(
      [1, 2, 3].map((i) =>
        api.create({ create_info: { task_type: 'demo.echo', task_name: `charted ${i}` } }),
      ),
    );
    const failed = await api.create({
      create_info: { task_type: 'demo.flaky', task_name: 'charted failure' },
      process_arg: { max_retry: 0 },
      params: { fail_times: 1 },
    });
    for (const id of [...ids, failed]) await api.until(id, 'FINISH', SETTLE_MS);

    await page.goto(h.url('/'));
    await h.heading('Overview').waitFor();
    const chart = page.getByRole('img', { name: 'Tasks finished per minute, by outcome' });
    await chart.waitFor();
    const caption = page.locator('figure.chart figcaption');
    await caption
      .getByText('4 tasks finished in the last 60 minutes: 3 succeeded, 1 failed, 0 rolled back')
      .waitFor({ timeout: 30_000 });
    // The bars hold the same four.
    const totals = await page
      .locator('figure.chart svg g[data-total]')
      .evaluateAll((gs) =>
        gs.map((g) => Number((g as unknown as { dataset: { total: string } }).dataset.total)),
      );
    expect(totals).toHaveLength(60);
    expect(totals.reduce((a, b) => a + b, 0)).toBe(4);
    // The table beside it says the same.
    await page.getByText(/The minutes as a table \([12] with tasks finished\)/).click();
    const rows = page.getByRole('region', { name: 'Finished per minute' }).locator('tbody tr');
    const cells = await rows.evaluateAll((trs) =>
      trs.map((tr) =>
        (tr as unknown as { innerText: string }).innerText
          .trim()
          .split(/\s+/)
          .slice(-4)
          .map(Number),
      ),
    );
    expect(cells.reduce((n, c) => n + c[0], 0)).toBe(3);
    expect(cells.reduce((n, c) => n + c[1], 0)).toBe(1);
    // Only one type: the select narrows the chart to it, in the address.
    await page.getByLabel('Task type').selectOption('demo.flaky');
    await page.waitForURL(/\?type=demo\.flaky$/);
    await caption.getByText('1 demo.flaky tasks finished in the last 60 minutes').waitFor();

    // Recent failures agree with the chart: the same one failure, newest failure first.
    await page
      .getByTestId('failed-last-hour')
      .getByText('1 task failed in the last hour')
      .waitFor();
    const firstFailure = page
      .getByRole('region', { name: 'Recent failures' })
      .getByRole('listitem')
      .first();
    await firstFailure.getByRole('link', { name: 'charted failure' }).waitFor();
    await page.getByRole('heading', { name: 'Waiting to start' }).waitFor();
    await page.getByText('Nothing waits: every task that is due has started.').waitFor();
    await expectAccessible();
    await h.shot('ops-overview');
    const failure = page.getByRole('link', { name: 'charted failure' });
    await failure.click();
    await page.waitForURL(new RegExp(`/tasks/${failed}$`));
    await h.heading('charted failure').waitFor();
  });

  it('creates a timer with its cron previewed by the scheduler, and shows a bad cron’s error', async () => {
    await page.goto(h.url('/timers'));
    await h.heading('Timers').waitFor();
    await page.getByRole('button', { name: 'New timer' }).click();
    const form = page.getByRole('region', { name: 'New timer' });
    await form.getByLabel('Name', { exact: true }).fill('berlin mornings');
    await form.getByLabel('Task type').selectOption('demo.echo');
    await form.getByLabel('Cron expression').fill('0 30 9 * * 1-5');
    await form.getByLabel('Time zone').fill('Europe/Berlin');
    const body = {
      name: 'berlin mornings',
      schedule: { kind: 'cron', cron: '0 30 9 * * 1-5', time_zone: 'Europe/Berlin' },
      task: { create_info: { task_type: 'demo.echo', task_name: 'berlin mornings' } },
    };
    const expected = (await api.call<{ next_fires: string[] }>('POST', '/v1/timers/preview', body))
      .data.next_fires;
    expect(expected).toHaveLength(5);
    const fires = form.getByRole('list', { name: 'Next fires' }).locator('time');
    await eventually(
      async () => {
        const shown = await fires.evaluateAll((ts) =>
          ts.map((t) => (t as unknown as { dateTime: string }).dateTime),
        );
        return JSON.stringify(shown) === JSON.stringify(expected) ? true : undefined;
      },
      30_000,
      'the five fires of the preview shown',
    );
    await h.shot('ops-timer-preview');

    // A bad cron: the scheduler's own words, as a create would answer them.
    await form.getByLabel('Cron expression').fill('61 * * * *');
    const refused = await api.call('POST', '/v1/timers/preview', {
      ...body,
      schedule: { kind: 'cron', cron: '61 * * * *', time_zone: 'Europe/Berlin' },
    });
    expect(refused.status).toBe(400);
    await form.getByText(refused.message, { exact: true }).waitFor({ timeout: 30_000 });
    expect(await fires.count()).toBe(0);
    await expectAccessible();
    await h.shot('ops-timer-bad-cron');

    await form.getByLabel('Cron expression').fill('0 30 9 * * 1-5');
    await form.getByRole('list', { name: 'Next fires' }).waitFor();
    await form.getByRole('button', { name: 'Create timer' }).click();
    await page.getByRole('status').filter({ hasText: 'berlin mornings: created.' }).waitFor();
    const row = page.getByRole('row').filter({ hasText: 'berlin mornings' });
    const listed = row.getByRole('list', { name: 'Next fires of berlin mornings' }).locator('time');
    await eventually(
      async () => ((await listed.count()) === 5 ? true : undefined),
      30_000,
      'the new timer listed with five fires',
    );
    const timers = await api.call<{ name: string; next_fires: string[] }[]>('GET', '/v1/timers');
    expect(timers.data.find((t) => t.name === 'berlin mornings')?.next_fires).toEqual(expected);
    // Local time shown, UTC on hover.
    expect(await listed.first().getAttribute('title')).toMatch(/ UTC$/);
    await h.shot('ops-timers');

    // Change one: a new schedule, previewed; what the form does not show of its task stays.
    const made = await api.call<{ timer_id: string }>('POST', '/v1/timers', {
      name: 'labelled noon',
      schedule: { kind: 'interval', every_ms: 3_600_000 },
      task: {
        create_info: { task_type: 'demo.echo', task_name: 'noon', important_level: 8 },
        labels: { team: 'dba' },
      },
    });
    await page.reload();
    await page.getByRole('button', { name: 'Change labelled noon' }).click();
    const edit = page.getByRole('region', { name: 'Change labelled noon' });
    await edit.getByLabel('Schedule').selectOption('cron');
    await edit.getByLabel('Cron expression').fill('0 0 12 * * *');
    await edit.getByLabel('Time zone').fill('UTC');
    await eventually(
      async () => {
        const shown = await edit
          .getByRole('list', { name: 'Next fires' })
          .locator('time')
          .evaluateAll((ts) => ts.map((t) => (t as unknown as { dateTime: string }).dateTime));
        return shown.length === 5 && shown.every((f) => f.endsWith('T12:00:00.000Z'))
          ? true
          : undefined;
      },
      30_000,
      'five noons previewed',
    );
    await edit.getByRole('button', { name: 'Save timer' }).click();
    await page.getByRole('status').filter({ hasText: 'labelled noon: changed.' }).waitFor();
    const changed = await api.call<{
      schedule: { kind: string; cron: string };
      task: { create_info: { important_level: number }; labels: Record<string, string> };
    }>('GET', `/v1/timers/${made.data.timer_id}`);
    expect(changed.data.schedule).toMatchObject({ kind: 'cron', cron: '0 0 12 * * *' });
    expect(changed.data.task.create_info.important_level).toBe(8);
    expect(changed.data.task.labels).toEqual({ team: 'dba' });
  });

  it('makes a timer that starts a topology run, runs it now, and shows its past fires', async () => {
    const saved = await api.call('POST', '/v1/topologies', {
      name: 'console-nightly',
      nodes: [{ key: 'echo', task: { create_info: { task_type: 'demo.echo' }, params: {} } }],
    });
    expect(saved.message).toBe('ok');
    await page.goto(h.url('/timers'));
    await h.heading('Timers').waitFor();
    await page.getByRole('button', { name: 'New timer' }).click();
    const form = page.getByRole('region', { name: 'New timer' });
    await form.getByLabel('Name', { exact: true }).fill('nightly flow');
    await form.getByLabel('Cron expression').fill('0 0 3 * * *');
    await form.getByLabel('Time zone').fill('UTC');
    await form.getByLabel('Starts').selectOption('topology');
    await form.getByLabel('Topology').selectOption('console-nightly');
    await form.getByLabel('Run input (JSON)').fill('{"db": "orders"}');
    await form.getByLabel('When the last fire still runs').selectOption('skip');
    await form.getByLabel('After slots were missed (downtime)').selectOption('skip');
    await form.getByRole('list', { name: 'Next fires' }).waitFor({ timeout: 30_000 });
    await expectAccessible();
    await h.shot('ops-timer-topology');
    await form.getByRole('button', { name: 'Create timer' }).click();
    await page.getByRole('status').filter({ hasText: 'nightly flow: created.' }).waitFor();
    const timers = await api.call<
      {
        timer_id: string;
        name: string;
        task: unknown;
        topology: { name: string; input: Record<string, unknown> };
        overlap_policy: string;
        misfire_policy: string;
      }[]
    >('GET', '/v1/timers');
    const made = timers.data.find((t) => t.name === 'nightly flow');
    expect(made).toMatchObject({
      task: null,
      topology: { name: 'console-nightly', input: { db: 'orders' } },
      overlap_policy: 'skip',
      misfire_policy: 'skip',
    });

    // Run now: the confirmation says what will happen, then the fire is listed with its run.
    await page.getByRole('button', { name: 'Run now nightly flow' }).click();
    const confirm = page.getByRole('dialog', { name: 'Run nightly flow now?' });
    await confirm.getByText('Starts a run of topology console-nightly now').waitFor();
    await confirm.getByText('Its overlap policy is skip').waitFor();
    await expectAccessible();
    await confirm.getByRole('button', { name: 'Run now', exact: true }).click();
    await page.getByRole('status').filter({ hasText: 'nightly flow: fired now (run ' }).waitFor();
    const fires = page.getByRole('region', { name: 'Past fires of nightly flow' });
    const fire = fires.getByRole('row').filter({ hasText: 'run now' });
    await fire.waitFor({ timeout: 30_000 });
    const runs = await api.call<{ items: { run_id: string; labels: Record<string, string> }[] }>(
      'GET',
      `/v1/topology-runs?label=timer_id:${made?.timer_id ?? ''}`,
    );
    expect(runs.data.items).toHaveLength(1);
    const runId = runs.data.items[0].run_id;
    expect(runs.data.items[0].labels.manual_fire).toBe('true');
    await fire.getByRole('link', { name: runId }).waitFor();
    await api.until(runId, 'FINISH', SETTLE_MS);
    await fire.getByText('SUCCESS').waitFor({ timeout: 30_000 });
    await expectAccessible();
    await h.shot('ops-timer-fires');
    await fire.getByRole('link', { name: runId }).click();
    await page.waitForURL(new RegExp(`/topology-runs/${runId}$`));

    // A task timer's params are fields from the type's schema; a value it refuses is named there.
    await page.goto(h.url('/timers'));
    await h.heading('Timers').waitFor();
    await page.getByRole('button', { name: 'New timer' }).click();
    const sleepy = page.getByRole('region', { name: 'New timer' });
    await sleepy.getByLabel('Name', { exact: true }).fill('long sleeper');
    await sleepy.getByLabel('Task type').selectOption('demo.sleep');
    const seconds = sleepy.getByLabel('seconds', { exact: true });
    expect(await seconds.inputValue()).toBe('5');
    await seconds.fill('7200');
    await sleepy.getByRole('button', { name: 'Create timer' }).click();
    await sleepy.getByText('must be <= 3600').waitFor({ timeout: 30_000 });
    expect(await seconds.getAttribute('aria-invalid')).toBe('true');
    expect(
      (await api.call<{ name: string }[]>('GET', '/v1/timers')).data.map((t) => t.name),
    ).not.toContain('long sleeper');
    await sleepy.getByRole('button', { name: 'Close' }).click();
  });

  it('tests a log rule on a matching and a non-matching line, then saves it', async () => {
    const tasksBefore = (await api.call<{ items: unknown[] }>('GET', '/v1/tasks?limit=500')).data
      .items.length;
    await page.goto(h.url('/log-rules'));
    await h.heading('Log rules').waitFor();
    await page.getByRole('button', { name: 'New rule' }).click();
    const form = page.getByRole('region', { name: 'New log rule' });
    await form.getByLabel('Name', { exact: true }).fill('console disk full');
    const line = form.getByLabel('Log line');
    const result = form.getByTestId('rule-test');

    await line.fill('ERROR disk full on db-7.prod');
    await form.getByRole('button', { name: 'Test line' }).click();
    await result.getByText('Matches.').waitFor();
    await result.getByText('It would make this task:').waitFor();
    expect(await result.locator('pre').textContent()).toContain('"task_name": "clean db-7.prod"');
    await h.shot('ops-log-rule-match');

    await line.fill('all good on db-7');
    await form.getByRole('button', { name: 'Test line' }).click();
    await result.getByText('No match:').waitFor();
    await expectAccessible();

    // Nothing saved and no task made by the tests.
    expect((await api.call<unknown[]>('GET', '/v1/log-rules')).data).toHaveLength(0);
    expect(
      (await api.call<{ items: unknown[] }>('GET', '/v1/tasks?limit=500')).data.items,
    ).toHaveLength(tasksBefore);

    await form.getByRole('button', { name: 'Save rule' }).click();
    await page.getByRole('status').filter({ hasText: 'console disk full: created.' }).waitFor();
    await page.getByRole('listitem').filter({ hasText: 'console disk full' }).waitFor();
    const rules = await api.call<{ name: string; match: unknown }[]>('GET', '/v1/log-rules');
    expect(rules.data.map((r) => [r.name, r.match])).toEqual([
      ['console disk full', { regex: 'disk full on (?<host>[\\w.-]+)' }],
    ]);
    await h.shot('ops-log-rules');
  });

  it('subscribes a real receiver, shows its deliveries, and redelivers one it gets again', async () => {
    // A receiver path as long as real ones are: the page must still show every action at 1,280 px.
    const HOOK = 'orders-cluster-failover-notifications-for-the-on-call-team-console';
    await page.goto(h.url('/webhooks'));
    await h.heading('Webhooks').waitFor();
    await page.getByText('No subscriptions.').waitFor();
    await page.getByRole('button', { name: 'New subscription' }).click();
    const form = page.getByRole('region', { name: 'New subscription' });
    await form.getByLabel('URL (http or https)').fill(receiver.hook(HOOK));
    await form.getByLabel('Description').fill('console receiver of the orders cluster failovers');
    await form.getByRole('button', { name: 'Subscribe' }).click();
    const secret = (await page.getByTestId('webhook-secret').textContent()) ?? '';
    expect(secret).toMatch(/^whsec_/);
    await receiver.control('secret', { name: HOOK, secrets: [secret] });
    await page.getByRole('button', { name: 'I have kept it' }).click();

    const url = receiver.hook(HOOK);
    await page.getByRole('button', { name: `Send test to ${url}` }).click();
    await page.getByRole('status').filter({ hasText: 'test message sent' }).waitFor();
    await page.getByRole('link', { name: `Deliveries of ${url}` }).click();
    await page.waitForURL(/\/webhooks\?webhook=/);
    const log = page.getByRole('region', { name: 'Deliveries' });
    const row = log.locator('tbody tr').first();
    await row.getByText('delivered', { exact: true }).waitFor({ timeout: SETTLE_MS });
    await row.getByText('HTTP 200').waitFor();
    const messageId = (await row.getAttribute('data-message')) ?? '';
    expect(messageId).toMatch(/^msg_/);
    const got = await receiver.got(HOOK);
    expect(got.filter((g) => g.id === messageId && g.verified)).toHaveLength(1);
    await expectAccessible();
    await h.shot('ops-webhook-deliveries');

    await row.getByRole('button', { name: `Redeliver ${messageId}` }).click();
    await page.getByRole('status').filter({ hasText: '1 message(s) to be sent again' }).waitFor();
    await eventually(
      async () =>
        (await receiver.got(HOOK)).filter((g) => g.id === messageId && g.verified).length === 2
          ? true
          : undefined,
      SETTLE_MS,
      'the receiver got the same message again',
    );
    await row.getByText('2', { exact: true }).waitFor({ timeout: 30_000 });

    // Delete asks first; Back keeps it.
    await page.getByRole('button', { name: `Delete ${url}` }).click();
    const dialog = page.getByRole('dialog', { name: `Delete the subscription to ${url}?` });
    await dialog.getByRole('button', { name: 'Back' }).click();
    expect((await api.call<unknown[]>('GET', '/v1/webhooks')).data).toHaveLength(1);

    // Rotate: a new secret, shown once; disable and enable again.
    await page.getByRole('button', { name: `Rotate secret of ${url}` }).click();
    const rotated = (await page.getByTestId('webhook-secret').textContent()) ?? '';
    expect(rotated).toMatch(/^whsec_/);
    expect(rotated).not.toBe(secret);
    await page.getByRole('button', { name: 'I have kept it' }).click();
    await page.getByRole('button', { name: `Disable ${url}` }).click();
    await page.getByRole('button', { name: `Enable ${url}` }).waitFor();
    const hooks = await api.call<{ enabled: boolean }[]>('GET', '/v1/webhooks');
    expect(hooks.data.map((w) => w.enabled)).toEqual([false]);
    await page.getByRole('button', { name: `Enable ${url}` }).click();
    await page.getByRole('button', { name: `Disable ${url}` }).waitFor();

    // Delete, confirmed: another subscription goes, this one stays.
    const doomedUrl = receiver.hook('doomed');
    await api.call('POST', '/v1/webhooks', { url: doomedUrl, events: ['task.finished'] });
    await page.reload();
    await page.getByRole('button', { name: `Delete ${doomedUrl}` }).click();
    const confirm = page.getByRole('dialog', { name: `Delete the subscription to ${doomedUrl}?` });
    await confirm.getByRole('button', { name: 'Delete', exact: true }).click();
    await page
      .getByRole('status')
      .filter({ hasText: `${doomedUrl}: deleted.` })
      .waitFor();
    const left = await api.call<{ url: string }[]>('GET', '/v1/webhooks');
    expect(left.data.map((w) => w.url)).toEqual([url]);
  });

  it('every operations page: no serious or critical axe violation, no sideways scroll on a phone', async () => {
    const hook = (await api.call<{ webhook_id: string }[]>('GET', '/v1/webhooks')).data[0];
    const pages: [string, string, string][] = [
      ['ops-overview', '/', 'Overview'],
      ['ops-timers', '/timers', 'Timers'],
      ['ops-log-rules', '/log-rules', 'Log rules'],
      ['ops-webhooks', `/webhooks?webhook=${hook.webhook_id}`, 'Webhooks'],
    ];
    const problems: string[] = [];
    for (const [size, suffix] of [
      [DESKTOP, ''],
      [PHONE, '-phone'],
    ] as const) {
      await page.setViewportSize(size);
      for (const [name, path, title] of pages) {
        await page.goto(h.url(path));
        await h.heading(title).waitFor();
        await eventually(
          async () => ((await page.getByText(/^Loading/).count()) === 0 ? true : undefined),
          30_000,
          `${name}${suffix} loaded`,
        );
        for (const v of await h.axeViolations())
          problems.push(
            `${name}${suffix}: ${v.impact} ${v.id} (${v.help}) at ${v.nodes.join(', ')}`,
          );
        const sideways = await h.sideways();
        if (sideways > 1)
          problems.push(`${name}${suffix}: the page scrolls ${sideways} px sideways`);
        // At desktop width a table fits: its last columns (the actions) are not off to the side.
        if (suffix === '')
          for (const region of await page.locator('.scroll[role="region"]').all()) {
            const hidden = await region.evaluate((el) => {
              const box = el as unknown as { scrollWidth: number; clientWidth: number };
              return box.scrollWidth - box.clientWidth;
            });
            if (hidden > 1)
              problems.push(
                `${name}: the ${await region.getAttribute('aria-label')} table hides ${hidden} px to the side`,
              );
          }
        await h.shot(`${name}${suffix}`);
      }
    }
    await page.setViewportSize(DESKTOP);
    expect(problems).toEqual([]);
    expect(h.pageErrors).toEqual([]);
  });
});
