/**
 * Every page of the console and its address ('*': one path segment, the page's parameter). The
 * console's server answers the app at exactly these addresses (apps/console/src/ui-pages.ts), and
 * App.tsx gives each its view in a map that must name every page, so a page cannot be reachable
 * by a link yet missing on reload, or the other way round. Plain data: the server imports it too.
 */
export const PAGES = {
  overview: '/',
  tasks: '/tasks',
  newTask: '/tasks/new',
  task: '/tasks/*',
  topologies: '/topologies',
  topology: '/topologies/*',
  topologyImport: '/topology-import',
  topologyRuns: '/topology-runs',
  topologyRun: '/topology-runs/*',
  approvals: '/approvals',
  timers: '/timers',
  logRules: '/log-rules',
  workers: '/workers',
  webhooks: '/webhooks',
} as const;

export type PageName = keyof typeof PAGES;

/** The page at `path` and its parameter (decoded), or undefined; an exact address wins over `*`. */
export function matchPage(path: string): { name: PageName; param: string } | undefined {
  const entries = Object.entries(PAGES) as [PageName, string][];
  const exact = entries.find(([, pattern]) => pattern === path);
  if (exact) return { name: exact[0], param: '' };
  for (const [name, pattern] of entries) {
    if (!pattern.endsWith('/*')) continue;
    const prefix = pattern.slice(0, -1);
    const rest = path.startsWith(prefix) ? path.slice(prefix.length) : '';
    if (rest && !rest.includes('/')) return { name, param: decodeURIComponent(rest) };
  }
  return undefined;
}
