/**
 * `npm run bench:console`: what one page view of the console costs against a large MariaDB. Fills
 * a database with 100,000 tasks (and, for a peer, one with 1,000), starts the real scheduler on it
 * and the console in front, and opens each page in Debian's Chromium (playwright-core, launched
 * by path: nothing downloads a browser). Per page: the API calls of one view (requests to /api/
 * from the navigation until the page has settled; the periodic refresh is not counted) and the
 * time from asking for the page to its last API answer; for the task list also the time from the
 * navigation's start to its first row on screen. Medians of BENCH_RUNS views (5) each, and the ratio of the two databases.
 *
 * Env: BENCH_TASKS (100000), BENCH_PEER_TASKS (1000), BENCH_RUNS (5), CHROMIUM (/usr/bin/chromium).
 * Not part of `npm test`; its times are wall-clock figures of whatever machine runs it.
 */
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { Browser, Page, chromium } from 'playwright-core';
import { createDataSource } from '../apps/scheduler/src/database';
import { ENTITIES } from '../apps/scheduler/src/entities';
import { envInt, onCleanup, runBench } from './bench-harness';
import { BENCH_ADMIN_KEY, BenchError, Child, sleep, startChild } from './bench-support';
import { fillTasks, mysqlFrom } from './task-fill';

const CHROMIUM = process.env.CHROMIUM ?? '/usr/bin/chromium';
const TASKS = envInt('BENCH_TASKS', 100_000);
const PEER_TASKS = envInt('BENCH_PEER_TASKS', 1_000);
const RUNS = envInt('BENCH_RUNS', 5);
/** Quiet time after the last API answer that counts as settled: under every page's refresh (3 s). */
const QUIET_MS = 800;
/** The scheduler's live stream of task changes, as the console passes it on. */
const LIVE_STREAM = '/api/v1/task-changes/stream';
/** The newest task of a filled database (fillTasks numbers them 1..n). */
const newestId = (n: number): string => `01K${String(n).padStart(23, '0')}`;

/** A call as printed: the live stream's list of watched ids is given as its length. */
const shortPath = (p: string): string =>
  p.replace(
    /^(\/api\/v1\/task-changes\/stream\?task_id=)([^&]*)/,
    (_, head: string, ids: string) => `${head}<${decodeURIComponent(ids).split(',').length} ids>`,
  );

interface View {
  name: string;
  path: string;
  /** What shows the page has its data. */
  ready: string;
}

const views = (tasks: number): View[] => [
  { name: 'overview', path: '/', ready: 'main h1' },
  { name: 'tasks', path: '/tasks', ready: 'tbody tr' },
  { name: 'tasks, search', path: '/tasks?q=backup%20berlin', ready: 'tbody tr' },
  { name: 'tasks, by priority', path: '/tasks?sort=priority', ready: 'tbody tr' },
  { name: 'tasks, failed', path: '/tasks?outcome=FAIL', ready: 'tbody tr' },
  { name: 'task', path: `/tasks/${newestId(tasks)}`, ready: 'main h1' },
  { name: 'new task', path: '/tasks/new', ready: 'main form' },
  { name: 'timers', path: '/timers', ready: 'main h1' },
  { name: 'log rules', path: '/log-rules', ready: 'main h1' },
  { name: 'workers', path: '/workers', ready: 'main h1' },
];

interface Sample {
  calls: number;
  distinct: number;
  /** From asking for the page to the last API answer of the view. */
  lastAnswerMs: number;
  firstRowMs: number | null;
  paths: string[];
}

/** One view of `path` in a fresh document: its API calls until it settled, and its times. */
async function viewOnce(page: Page, base: string, view: View): Promise<Sample> {
  const calls: string[] = [];
  let inFlight = 0;
  let lastDone = 0;
  let settled = false;
  const onRequest = (r: { url(): string }): void => {
    const u = new URL(r.url());
    if (!u.pathname.startsWith('/api/') || settled) return;
    calls.push(`${u.pathname}${u.search}`);
    // The live stream stays open for the page's life: a call, but never an answer to wait for.
    if (u.pathname !== LIVE_STREAM) inFlight++;
  };
  const onDone = (r: { url(): string }): void => {
    const path = new URL(r.url()).pathname;
    if (!path.startsWith('/api/') || path === LIVE_STREAM) return;
    inFlight = Math.max(0, inFlight - 1);
    lastDone = Date.now();
  };
  page.on('request', onRequest);
  page.on('requestfinished', onDone);
  page.on('requestfailed', onDone);
  try {
    const start = Date.now();
    await page.goto(`${base}${view.path}`, { waitUntil: 'commit' });
    await page.locator(view.ready).first().waitFor({ timeout: 60_000 });
    while (inFlight > 0 || Date.now() - lastDone < QUIET_MS) await sleep(50);
    settled = true;
    const firstRow = (await page.evaluate('window.__firstRow ?? null')) as number | null;
    return {
      calls: calls.length,
      distinct: new Set(calls).size,
      lastAnswerMs: lastDone - start,
      firstRowMs: view.ready === 'tbody tr' ? firstRow : null,
      paths: calls,
    };
  } finally {
    page.off('request', onRequest);
    page.off('requestfinished', onDone);
    page.off('requestfailed', onDone);
  }
}

const median = (xs: number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};

interface Result {
  view: View;
  samples: Sample[];
}

/** Fills a database with `tasks`, starts scheduler and console on it, and views every page. */
async function measure(browser: Browser, tasks: number, label: string): Promise<Result[]> {
  const config = mysqlFrom(`baton_console_bench_${label}`);
  const ds = createDataSource(config, ENTITIES);
  const t0 = Date.now();
  // Finished and paused tasks only: nothing is due, so the scheduler writes nothing meanwhile.
  await fillTasks(config, ds, tasks, false);
  await ds.destroy();
  onCleanup(`drop ${config.database}`, async () => {
    const drop = createDataSource({ ...config }, []);
    await drop.initialize();
    await drop.query(`DROP DATABASE IF EXISTS \`${config.database}\``);
    await drop.destroy();
  });
  console.log(`${tasks} tasks in ${config.database} in ${((Date.now() - t0) / 1000).toFixed(0)} s`);
  const scheduler: Child = await startChild(
    `scheduler (${label})`,
    'dist/apps/scheduler/src/main.js',
    {
      SCHEDULER_PORT: '0',
      BATON_INSTANCE_ID: `console-bench-${label}`,
      BATON_DB: 'mysql',
      BATON_MYSQL_DATABASE: config.database,
      BATON_DB_MIGRATE: 'true',
      BATON_QUEUE: 'memory',
      BATON_LOCK: 'local',
      BATON_ADMIN_KEY: BENCH_ADMIN_KEY,
      BATON_AUTH_MODE: 'hmac',
      BATON_AUTH_SECRET: randomBytes(24).toString('hex'),
    },
    { timeoutMs: 120_000 },
  );
  onCleanup(`stop scheduler (${label})`, () => scheduler.stop());
  const consoleApp = await startChild(`console (${label})`, 'dist/apps/console/src/main.js', {
    CONSOLE_PORT: '0',
    BATON_SCHEDULER_URL: scheduler.url,
  });
  onCleanup(`stop console (${label})`, () => consoleApp.stop());
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  // The key as the sign-in page keeps it, and the instant the task list's first row is in the
  // document, from the navigation's start. A string: this file is compiled without the DOM's types.
  await context.addInitScript({
    content: `sessionStorage.setItem('baton.apiKey', ${JSON.stringify(BENCH_ADMIN_KEY)});
      new MutationObserver((_m, obs) => {
        if (document.querySelector('tbody tr')) {
          window.__firstRow = performance.now();
          obs.disconnect();
        }
      }).observe(document, { childList: true, subtree: true });`,
  });
  const page = await context.newPage();
  const results: Result[] = [];
  try {
    // One view first, not counted: the browser's cache holds the console's files, as for a
    // person who opens a second page.
    await viewOnce(page, consoleApp.url, views(tasks)[0]);
    for (const view of views(tasks)) {
      const samples: Sample[] = [];
      for (let i = 0; i < RUNS; i++) samples.push(await viewOnce(page, consoleApp.url, view));
      results.push({ view, samples });
    }
  } finally {
    await context.close();
    await consoleApp.stop();
    await scheduler.stop();
  }
  return results;
}

function report(tasks: number, results: Result[]): void {
  console.log(`\n${tasks} tasks in MariaDB, median of ${RUNS} views each`);
  console.log(
    `${'page'.padEnd(20)} ${'API calls'.padEnd(10)} ${'first row ms'.padEnd(13)} ${'last answer ms'.padEnd(15)} calls of one view`,
  );
  for (const { view, samples } of results) {
    const first = samples.map((s) => s.firstRowMs).filter((x): x is number => x !== null);
    const cells = [
      view.name.padEnd(20),
      String(median(samples.map((s) => s.distinct))).padEnd(10),
      (first.length ? median(first).toFixed(0) : '-').padEnd(13),
      median(samples.map((s) => s.lastAnswerMs))
        .toFixed(0)
        .padEnd(15),
      [...new Set(samples[0].paths.map(shortPath))].join(' '),
    ];
    console.log(cells.join(' '));
  }
}

async function main(): Promise<void> {
  if (!existsSync(CHROMIUM))
    throw new BenchError(`${CHROMIUM} is missing: run scripts/services.sh`);
  const browser = await chromium.launch({
    executablePath: CHROMIUM,
    args: ['--disable-gpu', '--no-first-run', '--disable-background-networking'],
  });
  onCleanup('close the browser', () => browser.close());
  const big = await measure(browser, TASKS, 'big');
  const peer = await measure(browser, PEER_TASKS, 'peer');
  report(TASKS, big);
  report(PEER_TASKS, peer);
  const firstRow = (rs: Result[], name: string): number =>
    median(
      rs
        .find((r) => r.view.name === name)
        ?.samples.map((s) => s.firstRowMs)
        .filter((x): x is number => x !== null) ?? [NaN],
    );
  console.log(`\nfirst row of the task list, ${TASKS} tasks against ${PEER_TASKS}:`);
  for (const name of ['tasks', 'tasks, search', 'tasks, by priority', 'tasks, failed']) {
    const [a, b] = [firstRow(big, name), firstRow(peer, name)];
    console.log(
      `  ${name.padEnd(20)} ${a.toFixed(0)} ms / ${b.toFixed(0)} ms = x${(a / b).toFixed(2)}`,
    );
  }
  console.log('(measured on a shared 2-core machine: times are rough)');
}

runBench(main, 30 * 60_000);
