/**
 * Every query's cache key, defined once: the page that reads some data and the page that
 * invalidates it after a change name it the same way. A key's leading parts are its kind, so
 * `keys.tasks()` (no page given) invalidates every page of the task list.
 */
export const keys = {
  overview: {
    history: (minutes: number) => ['task-history', minutes] as const,
    backlog: () => ['task-backlog'] as const,
    counts: () => ['task-counts'] as const,
    recentFailures: () => ['tasks', 'recent-failures'] as const,
  },
  tasks: (...page: unknown[]) => ['tasks', ...page] as const,
  task: (id: string) => ['task', id] as const,
  taskEvents: (id: string, version: unknown) => ['task-events', id, version] as const,
  taskAttempts: (id: string, version: unknown) => ['task-attempts', id, version] as const,
  taskDeliveries: (id: string, version: unknown) => ['task-deliveries', id, version] as const,
  taskLocks: (id: string) => ['task-locks', id] as const,
  taskTypes: () => ['task-types'] as const,
  workers: () => ['workers'] as const,
  timers: () => ['timers'] as const,
  timerPreview: (draft: unknown) => ['timer-preview', draft] as const,
  timerFires: (id: string, runs: boolean) => ['timer-fires', id, runs] as const,
  logRules: () => ['log-rules'] as const,
  webhooks: () => ['webhooks'] as const,
  deliveries: (webhookId: string, ...page: unknown[]) =>
    ['deliveries', webhookId, ...page] as const,
  topologies: () => ['topologies'] as const,
  topologyVersions: (name: string) => ['topology-versions', name] as const,
  topology: (name: string, version: unknown) => ['topology', name, version] as const,
  topologyRuns: (...filters: unknown[]) => ['topology-runs', ...filters] as const,
  topologyRun: (id: string) => ['topology-run', id] as const,
  approvals: () => ['topology-approvals'] as const,
  /** Under the run's key: invalidating the run reads its history again too. */
  topologyRunHistory: (id: string) => ['topology-run', id, 'history'] as const,
};
