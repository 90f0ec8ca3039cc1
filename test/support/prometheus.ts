import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { request } from 'undici';
import { stringify } from 'yaml';
import { ROOT, eventually, freePort } from './processes';

/** The Debian package `prometheus` puts both here; `bash scripts/services.sh` installs it. */
export const PROMTOOL = '/usr/bin/promtool';
export const PROMETHEUS = '/usr/bin/prometheus';

/** Fails, saying how to get it, when `path` is not installed: nothing is skipped. */
export function requireTool(path: string): void {
  if (!existsSync(path))
    throw new Error(
      `${path} is missing: \`bash scripts/services.sh\` installs it (package prometheus)`,
    );
}

/** Runs a program to its end: exit code and output. */
export function run(
  bin: string,
  args: string[],
  timeoutMs = 60_000,
): Promise<{ code: number | null; out: string }> {
  return new Promise((resolve, reject) => {
    const proc = spawn(bin, args, { cwd: ROOT });
    let out = '';
    proc.stdout.on('data', (c: Buffer) => (out += c.toString()));
    proc.stderr.on('data', (c: Buffer) => (out += c.toString()));
    const timer = setTimeout(() => {
      proc.kill('SIGKILL');
      reject(new Error(`${bin} ${args.join(' ')} ran over ${timeoutMs} ms:\n${out}`));
    }, timeoutMs);
    proc.on('error', reject);
    proc.on('exit', (code) => {
      clearTimeout(timer);
      resolve({ code, out });
    });
  });
}

/** One sample of a query answer. */
export interface PromSample {
  metric: Record<string, string>;
  value: [number, string];
}

/** A rule as `/api/v1/rules` shows it. */
export interface PromRule {
  name: string;
  query: string;
  health: string;
  state?: 'inactive' | 'pending' | 'firing';
  lastError?: string;
  alerts?: { labels: Record<string, string>; state: string }[];
}

export interface ScrapeJob {
  job: string;
  targets: string[];
  /** Added to every series of the job, as Kubernetes discovery adds `namespace`. */
  labels?: Record<string, string>;
}

/** A real Prometheus server of the Debian package, on a free loopback port, with its own data. */
export class RunningPrometheus {
  private constructor(
    readonly url: string,
    private readonly dir: string,
    private readonly stopProcess: () => Promise<void>,
    readonly output: () => string,
  ) {}

  /** Scrapes `jobs` every second and evaluates `ruleFiles` (absolute paths) every second. */
  static async start(jobs: ScrapeJob[], ruleFiles: string[]): Promise<RunningPrometheus> {
    requireTool(PROMETHEUS);
    const dir = mkdtempSync(join(tmpdir(), 'baton-prometheus-'));
    const config = join(dir, 'prometheus.yml');
    writeFileSync(
      config,
      stringify({
        global: { scrape_interval: '1s', evaluation_interval: '1s' },
        rule_files: ruleFiles,
        scrape_configs: jobs.map((j) => ({
          job_name: j.job,
          static_configs: [{ targets: j.targets, labels: j.labels ?? {} }],
        })),
      }),
    );
    const port = await freePort();
    const proc = spawn(
      PROMETHEUS,
      [
        `--config.file=${config}`,
        `--storage.tsdb.path=${join(dir, 'data')}`,
        `--web.listen-address=127.0.0.1:${port}`,
      ],
      { cwd: dir, stdio: ['ignore', 'pipe', 'pipe'] },
    );
    let out = '';
    proc.stdout.on('data', (c: Buffer) => (out += c.toString()));
    proc.stderr.on('data', (c: Buffer) => (out += c.toString()));
    const exited = new Promise<void>((resolve) => proc.once('exit', () => resolve()));
    const stop = async (): Promise<void> => {
      if (proc.exitCode === null && proc.signalCode === null) proc.kill('SIGTERM');
      await exited;
    };
    const url = `http://127.0.0.1:${port}`;
    const prom = new RunningPrometheus(url, dir, stop, () => out);
    try {
      await eventually(
        async () => {
          if (proc.exitCode !== null) throw new Error(`prometheus exited ${proc.exitCode}`);
          const res = await request(`${url}/-/ready`);
          await res.body.dump();
          return res.statusCode === 200 ? true : undefined;
        },
        60_000,
        'prometheus ready',
      );
    } catch (err) {
      await prom.stop();
      throw new Error(`${(err as Error).message}\n${out}`);
    }
    return prom;
  }

  private async api<T>(path: string): Promise<T> {
    const res = await request(`${this.url}/api/v1/${path}`);
    const body = (await res.body.json()) as { status: string; data: T; error?: string };
    if (body.status !== 'success') throw new Error(`${path}: ${body.error ?? res.statusCode}`);
    return body.data;
  }

  /** An instant query. */
  async query(expr: string): Promise<PromSample[]> {
    const data = await this.api<{ resultType: string; result: PromSample[] }>(
      `query?query=${encodeURIComponent(expr)}`,
    );
    return data.result;
  }

  /** The alerting rules of each group, by group name. */
  async rules(): Promise<Map<string, PromRule[]>> {
    const data = await this.api<{ groups: { name: string; rules: PromRule[] }[] }>(
      'rules?type=alert',
    );
    return new Map(data.groups.map((g) => [g.name, g.rules]));
  }

  async stop(): Promise<void> {
    await this.stopProcess();
    rmSync(this.dir, { recursive: true, force: true });
  }
}

const KEYWORDS = new Set([
  ...['by', 'without', 'on', 'ignoring', 'group_left', 'group_right'],
  ...['and', 'or', 'unless', 'offset', 'bool'],
]);

/**
 * The metric names a PromQL expression (or a Grafana query with `$variables` and
 * `label_values(metric, label)`) reads: what is left once strings, label matchers, ranges,
 * label lists, functions and keywords are taken out.
 */
export function metricNames(expr: string): string[] {
  const bare = expr
    .replace(/label_values\(\s*([\w:]+)\s*,[^)]*\)/g, '$1')
    .replace(/"(?:[^"\\]|\\.)*"/g, '""')
    .replace(/\{[^}]*\}/g, ' ')
    .replace(/\[[^\]]*\]/g, ' ')
    .replace(/\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)/g, ' ')
    .replace(/\$\w+/g, ' ');
  const names = new Set<string>();
  for (const m of bare.matchAll(/(?<![\w.])([a-zA-Z_:][\w:]*)(\s*\()?/g))
    if (!m[2] && !KEYWORDS.has(m[1])) names.add(m[1]);
  return [...names];
}

/** The selectors `name{label op "value", ...}` of an expression, with their label names. */
export function selectors(expr: string): { name: string; labels: string[] }[] {
  return [...expr.matchAll(/([a-zA-Z_:][\w:]*)\s*\{([^}]*)\}/g)].map((m) => ({
    name: m[1],
    labels: [...m[2].matchAll(/(\w+)\s*(?:=~|!~|!=|=)/g)].map((l) => l[1]),
  }));
}

/** The families a `/metrics` page declares (`# TYPE` lines), and the label names of its samples. */
export async function declaredFamilies(base: string): Promise<Map<string, Set<string>>> {
  const res = await request(`${base}/metrics`);
  const text = await res.body.text();
  if (res.statusCode !== 200) throw new Error(`GET ${base}/metrics answered ${res.statusCode}`);
  const found = new Map<string, Set<string>>();
  for (const m of text.matchAll(/^# TYPE ([\w:]+) /gm)) found.set(m[1], new Set());
  for (const m of text.matchAll(/^([\w:]+)\{([^}]*)\}/gm)) {
    const family = found.get(m[1]) ?? found.get(m[1].replace(/_(bucket|sum|count)$/, ''));
    for (const l of m[2].matchAll(/(\w+)="/g)) family?.add(l[1]);
  }
  return found;
}
