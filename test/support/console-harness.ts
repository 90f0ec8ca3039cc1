import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Browser, BrowserContext, Page, chromium } from 'playwright-core';
import { Api, Backend, embeddedBackend, startScheduler, startTemplateWorker } from './baton';
import { ROOT, RunningProcess, eventually, startProcess } from './processes';

/** Debian's Chromium (scripts/services.sh installs it); nothing here downloads a browser. */
export const CHROMIUM = '/usr/bin/chromium';
const CONSOLE_MAIN = 'dist/apps/console/src/main.js';
export const SHOTS = join(ROOT, '.test-results', 'console');
/** axe-core's build, evaluated in each page (through the debugger: the page's CSP stays on). */
const AXE = readFileSync(require.resolve('axe-core/axe.min.js'), 'utf8');
export const PHONE = { width: 390, height: 844 };
export const DESKTOP = { width: 1280, height: 900 };

export interface Violation {
  id: string;
  impact: string | null;
  help: string;
  nodes: string[];
}

/**
 * The console as its users meet it, for a browser test: the real scheduler (SQLite + memory
 * queue), the template worker and the console's own process, with Debian's Chromium driven by
 * playwright-core at desktop width, English-speaking. `pageErrors` collects uncaught script
 * errors of any page.
 */
export class ConsoleHarness {
  readonly pageErrors: string[] = [];

  private constructor(
    readonly backend: Backend,
    readonly dir: string,
    readonly scheduler: RunningProcess,
    readonly worker: RunningProcess,
    readonly consoleApp: RunningProcess,
    readonly api: Api,
    readonly browser: Browser,
    readonly context: BrowserContext,
    readonly page: Page,
  ) {
    page.on('pageerror', (err) => this.pageErrors.push(`${page.url()}: ${err.message}`));
  }

  /**
   * Starts everything; `workerId` names the template worker, `env` adds scheduler settings and
   * `consoleEnv` the console's.
   */
  static async start(
    workerId: string,
    env: NodeJS.ProcessEnv = {},
    consoleEnv: NodeJS.ProcessEnv = {},
  ): Promise<ConsoleHarness> {
    if (!existsSync(CHROMIUM))
      throw new Error(`${CHROMIUM} is missing: run \`bash scripts/services.sh\` (it installs it)`);
    if (!existsSync(join(ROOT, 'dist', 'console-ui', 'index.html')))
      throw new Error('the console is not built: run `npm run build:console` (npm test does)');
    mkdirSync(SHOTS, { recursive: true });
    const backend = embeddedBackend();
    const dir = mkdtempSync(join(tmpdir(), 'baton-console-'));
    const scheduler = await startScheduler(backend, env);
    const api = new Api(scheduler.url);
    const worker = await startTemplateWorker(workerId, scheduler.url, join(dir, 'runs.jsonl'));
    const consoleApp = await startProcess(CONSOLE_MAIN, {
      CONSOLE_PORT: '0',
      BATON_SCHEDULER_URL: scheduler.url,
      ...consoleEnv,
    });
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
    // Numbers and times as an English-speaking user sees them, whatever the machine's locale.
    const context = await browser.newContext({ viewport: DESKTOP, locale: 'en-US' });
    const page = await context.newPage();
    return new ConsoleHarness(
      backend,
      dir,
      scheduler,
      worker,
      consoleApp,
      api,
      browser,
      context,
      page,
    );
  }

  async stop(): Promise<void> {
    await this.browser.close();
    for (const p of [this.consoleApp, this.worker, this.scheduler]) await p.stop();
    await this.backend.cleanup();
    rmSync(this.dir, { recursive: true, force: true });
  }

  url(path: string): string {
    return `${this.consoleApp.url}${path}`;
  }

  shot(name: string): Promise<Buffer> {
    return this.page.screenshot({ path: join(SHOTS, `${name}.png`), fullPage: true });
  }

  heading(name: string) {
    return this.page.getByRole('heading', { level: 1, name, exact: true });
  }

  /** The serious and critical accessibility violations axe finds on the page as it is now. */
  async axeViolations(): Promise<Violation[]> {
    await this.page.evaluate(AXE);
    const found = await this.page.evaluate(async () => {
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

  /** How many pixels the page scrolls sideways (0 when it fits its width). */
  sideways(): Promise<number> {
    return this.page.evaluate(() => {
      const d = (
        globalThis as unknown as {
          document: { documentElement: { scrollWidth: number; clientWidth: number } };
        }
      ).document.documentElement;
      return d.scrollWidth - d.clientWidth;
    });
  }
}
