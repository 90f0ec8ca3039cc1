import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Browser, BrowserContext, Page, chromium } from 'playwright-core';
import { Api, Backend, embeddedBackend, startScheduler, startTemplateWorker } from './baton';
import { ROOT, RunningProcess, eventually, startProcess } from './processes';

/** Debian's Chromium (scripts/services.sh installs it); nothing here downloads a browser. */
export const CHROMIUM = '/usr/bin/chromium';
const CONSOLE_MAIN = 'dist/apps/console/src/main.js';
/** Where every browser test writes its screenshots. */
export const SHOTS = join(ROOT, '.test-results', 'console');
/** axe-core's build, evaluated in each page (through the debugger: the page's CSP stays on). */
const AXE = readFileSync(require.resolve('axe-core/axe.min.js'), 'utf8');
/** Waits for an end state: long, since a loaded two-core machine may be slow; never a measure. */
export const SETTLE_MS = 90_000;
export const PHONE = { width: 390, height: 844 };
export const DESKTOP = { width: 1280, height: 900 };

export interface Violation {
  id: string;
  impact: string | null;
  help: string;
  nodes: string[];
}

/** The real scheduler (SQLite + memory queue), a template worker, the console and a browser. */
export interface ConsoleStack {
  backend: Backend;
  dir: string;
  scheduler: RunningProcess;
  worker: RunningProcess;
  consoleApp: RunningProcess;
  api: Api;
  browser: Browser;
  context: BrowserContext;
  page: Page;
  /** Uncaught script errors of the page, each with the address it happened on. */
  pageErrors: string[];
  stop(): Promise<void>;
}

/**
 * Starts the stack the browser tests walk: the scheduler on the embedded defaults, the template
 * worker `workerId` (waited for until healthy), the console's own process, and Debian's Chromium
 * with one English-speaking page at desktop width. Fails loudly when a piece is missing.
 */
export async function startConsoleStack(workerId: string): Promise<ConsoleStack> {
  if (!existsSync(CHROMIUM))
    throw new Error(`${CHROMIUM} is missing: run \`bash scripts/services.sh\` (it installs it)`);
  if (!existsSync(join(ROOT, 'dist', 'console-ui', 'index.html')))
    throw new Error('the console is not built: run `npm run build:console` (npm test does)');
  mkdirSync(SHOTS, { recursive: true });
  const backend = embeddedBackend();
  const dir = mkdtempSync(join(tmpdir(), 'baton-console-'));
  const started: RunningProcess[] = [];
  const stack: Partial<ConsoleStack> = { backend, dir, pageErrors: [] };
  stack.stop = async () => {
    await stack.browser?.close();
    for (const p of started.reverse()) await p.stop();
    await backend.cleanup();
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    const scheduler = await startScheduler(backend);
    started.push(scheduler);
    const api = new Api(scheduler.url);
    const worker = await startTemplateWorker(workerId, scheduler.url, join(dir, 'runs.jsonl'));
    started.push(worker);
    const consoleApp = await startProcess(CONSOLE_MAIN, {
      CONSOLE_PORT: '0',
      BATON_SCHEDULER_URL: scheduler.url,
    });
    started.push(consoleApp);
    Object.assign(stack, { scheduler, worker, consoleApp, api });
    await eventually(
      async () => {
        const res = await api.call<{ worker_id: string; health: string }[]>('GET', '/v1/workers');
        return res.data.some((w) => w.worker_id === workerId && w.health === 'healthy')
          ? true
          : undefined;
      },
      60_000,
      'the template worker registered and healthy',
    );
    const browser = await chromium.launch({
      executablePath: CHROMIUM,
      // No background traffic: this machine's network is closed, and the tests need none.
      args: [
        '--disable-gpu',
        '--disable-quic',
        '--no-first-run',
        '--disable-background-networking',
        '--disable-component-update',
        '--disable-sync',
      ],
    });
    stack.browser = browser;
    // Numbers and times as an English-speaking user sees them, whatever the machine's locale.
    const context = await browser.newContext({ viewport: DESKTOP, locale: 'en-US' });
    const page = await context.newPage();
    page.on('pageerror', (err) => stack.pageErrors?.push(`${page.url()}: ${err.message}`));
    Object.assign(stack, { context, page });
  } catch (err) {
    await stack.stop();
    throw err;
  }
  return stack as ConsoleStack;
}

/** The serious and critical accessibility violations axe finds on the page as it is now. */
export async function axeViolations(page: Page): Promise<Violation[]> {
  await page.evaluate(AXE);
  const found = await page.evaluate(async () => {
    type AxeResult = {
      violations: {
        id: string;
        impact: string | null;
        help: string;
        nodes: { target: unknown[] }[];
      }[];
    };
    const axe = (globalThis as unknown as { axe: { run(): Promise<AxeResult> } }).axe;
    const result = await axe.run();
    return result.violations.map((v) => ({
      id: v.id,
      impact: v.impact,
      help: v.help,
      nodes: v.nodes.slice(0, 5).map((n) => n.target.join(' ')),
    }));
  });
  return found.filter((v) => v.impact === 'serious' || v.impact === 'critical');
}

/** How many pixels the page scrolls sideways (a phone page should not). */
export function sidewaysScroll(page: Page): Promise<number> {
  return page.evaluate(() => {
    const d = (
      globalThis as unknown as {
        document: { documentElement: { scrollWidth: number; clientWidth: number } };
      }
    ).document.documentElement;
    return d.scrollWidth - d.clientWidth;
  });
}

/** The outermost elements that reach past the right edge of the page (why it scrolls sideways). */
export function widerThanPage(page: Page): Promise<string[]> {
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
