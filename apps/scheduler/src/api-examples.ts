/**
 * A request body for every public route that takes one, as the OpenAPI document shows it (Swagger
 * UI's "Try it out" starts from the first). Each works as given on `npm start` (the template
 * worker's `demo.*` types), with a key of the route's role; test/openapi-walk.e2e-spec.ts sends
 * every one of them.
 */
type Examples = Record<string, { summary: string; value: unknown }>;

const echo = (name: string): Record<string, unknown> => ({
  create_info: { task_type: 'demo.echo', task_name: name },
  params: { message: 'hello' },
});

/** A topology of the template worker's demo.echo: a failover drill, as a team would write one. */
const DRILL = {
  name: 'failover-drill',
  description: 'check the cluster, promote its primary, repoint every proxy, verify',
  nodes: [
    {
      key: 'check',
      task: {
        create_info: { task_type: 'demo.echo' },
        params: { primary: '{{input.cluster}}-db2', proxies: ['proxy-a', 'proxy-b', 'proxy-c'] },
      },
    },
    {
      key: 'promote',
      depends_on: ['check'],
      task: {
        create_info: { task_type: 'demo.echo' },
        params: { promote: '{{nodes.check.result.echo.primary}}' },
      },
    },
    {
      key: 'repoint',
      depends_on: ['promote'],
      for_each: '{{nodes.check.result.echo.proxies}}',
      concurrency: 2,
      task: {
        create_info: { task_type: 'demo.echo', task_name: 'repoint {{item}}' },
        params: { proxy: '{{item}}', primary: '{{nodes.check.result.echo.primary}}' },
      },
    },
    { key: 'verify', depends_on: ['repoint'], task: { create_info: { task_type: 'demo.echo' } } },
    {
      key: 'page',
      on_failure: true,
      task: {
        create_info: { task_type: 'demo.echo' },
        params: { message: 'failover drill of {{input.cluster}} failed' },
      },
    },
  ],
};

export const REQUEST_EXAMPLES: Record<string, Examples> = {
  TasksController_rerun: {
    changed: {
      summary: 'a new attempt with other params',
      value: { params: { message: 'again' } },
    },
  },
  TopologiesController_save: {
    drill: {
      summary: 'a failover drill: check, promote, repoint each proxy, verify',
      value: DRILL,
    },
  },
  TopologiesController_check: {
    drill: { summary: 'the failover drill, checked and not stored', value: DRILL },
  },
  TopologiesController_start: {
    run: {
      summary: 'a run for one cluster, labelled for its team',
      value: { input: { cluster: 'orders' }, labels: { team: 'dba' } },
    },
  },
  TopologyRunsController_approve: {
    approved: {
      summary: 'approve, saying why',
      value: { comment: 'replica lag under 1 s, change window open' },
    },
  },
  TopologyRunsController_reject: {
    rejected: {
      summary: 'reject, saying why',
      value: { comment: 'not during the sale' },
    },
  },
  TopologyRunsController_signal: {
    approved: {
      summary: 'end the wait of the nodes waiting for "approved"',
      value: { signal: 'approved', data: { by: 'alice' } },
    },
  },
  ApiKeysController_create: {
    operator: {
      summary: 'a key for a deploy pipeline',
      value: { name: 'deploy-bot', role: 'operator' },
    },
    tenant: {
      summary: "a read-only key that sees one tenant's work",
      value: { name: 'payments-dashboard', role: 'viewer', tenant: 'payments' },
    },
  },
  TaskTypesController_update: {
    retries: {
      summary: 'retry three times, backing off',
      value: { max_retry: 3, backoff_base_ms: 2000 },
    },
    rollout: {
      summary: 'workers from 0.1.0 on, not 0.1.3; a tenth of new tasks to 0.2.0 while it rolls out',
      value: {
        worker_rules: {
          min_version: '0.1.0',
          blocked_versions: ['0.1.3'],
          ramp: { version: '0.2.0', percent: 10 },
        },
      },
    },
  },
  WorkersController_blacklist: {
    until: {
      summary: 'keep tasks off a node until a disk is replaced',
      value: { reason: 'disk errors on /dev/sdb (INC-2041)', until: '2030-01-01T00:00:00Z' },
    },
    lifted: {
      summary: 'keep tasks off a node until the blacklist is lifted (DELETE)',
      value: { reason: 'kernel upgrade pending' },
    },
  },
  TenantsController_set: {
    limits: {
      summary: 'at most 50 starts a second, 20 at once',
      value: { rate_limit_per_sec: 50, concurrency_limit: 20 },
    },
  },
  TasksController_create: {
    echo: { summary: 'a task of the template worker, run now', value: echo('hello') },
    later: {
      summary: 'once, at a time, with a retry and an idempotency key',
      value: {
        ...echo('nightly report'),
        process_arg: { start_time: '2030-01-01T03:00:00Z', max_retry: 1 },
        labels: { team: 'dba' },
        idempotency_key: 'report-2030-01-01',
      },
    },
  },
  TasksController_createBatch: {
    two: {
      summary: 'two tasks, made together or not at all',
      value: { tasks: [echo('first'), echo('second')] },
    },
  },
  TasksController_change: {
    params: {
      summary: 'new params for a task not yet decided',
      value: { params: { message: 'changed' } },
    },
  },
  TimersController_create: {
    cron: {
      summary: 'every night at 03:00 UTC',
      value: {
        name: 'nightly echo',
        schedule: { kind: 'cron', cron: '0 0 3 * * *', time_zone: 'UTC' },
        task: echo('nightly'),
      },
    },
  },
  TimersController_preview: {
    zone: {
      summary: 'weekdays at 09:30 in Berlin: the next five fires, nothing stored',
      value: {
        name: 'morning report',
        schedule: { kind: 'cron', cron: '0 30 9 * * 1-5', time_zone: 'Europe/Berlin' },
        task: echo('morning report'),
      },
    },
    interval: {
      summary: 'every ten minutes from a given instant',
      value: {
        name: 'poll',
        schedule: { kind: 'interval', every_ms: 600_000, at: '2030-01-01T00:00:00Z' },
        task: echo('poll'),
      },
    },
  },
  TimersController_update: {
    stop: { summary: 'stop it firing', value: { enabled: false } },
  },
  LogRulesController_create: {
    regex: {
      summary: 'a task per "disk full" line, named after the host',
      value: {
        name: 'disk full',
        sources: ['http:*'],
        match: { regex: 'disk full on (?<host>[\\w.-]+)' },
        template: {
          create_info: { task_type: 'demo.echo', task_name: 'clean {{host}}' },
          params: { host: '{{host}}' },
        },
      },
    },
  },
  LogRulesController_test: {
    matching: {
      summary: 'a "disk full" rule tried on a line it matches',
      value: {
        rule: {
          name: 'disk full',
          match: { regex: 'disk full on (?<host>[\\w.-]+)' },
          template: {
            create_info: { task_type: 'demo.echo', task_name: 'clean {{host}}' },
            params: { host: '{{host}}' },
          },
        },
        line: 'ERROR disk full on db-7.prod',
      },
    },
  },
  LogRulesController_update: {
    disable: { summary: 'switch it off', value: { enabled: false } },
  },
  LogsController_ingest: {
    lines: {
      summary: 'two lines of one source',
      value: {
        source: 'app',
        records: [
          { position: 1, line: 'disk full on db-1' },
          { position: 2, line: 'all good' },
        ],
      },
    },
  },
  WebhooksController_create: {
    outcomes: {
      summary: 'hear when a task ends, well or badly',
      value: {
        url: 'https://hooks.example.com/baton',
        events: ['task.succeeded', 'task.failed', 'task.timed_out'],
        description: 'deploy pipeline',
      },
    },
    filtered: {
      summary: "every move of one team's failovers",
      value: {
        url: 'https://chat.example.com/hooks/dba',
        events: ['task.status_changed'],
        task_types: ['demo.sleep'],
        labels: { team: 'dba' },
      },
    },
  },
  WebhooksController_update: {
    events: {
      summary: 'failures only',
      value: { events: ['task.failed', 'task.timed_out'] },
    },
    enable: {
      summary: 'enable it again (clears a failing streak)',
      value: { enabled: true },
    },
  },
  WebhooksController_redeliverFailed: {
    since: {
      summary: 'everything given up since the receiver broke',
      value: { since: '2026-01-01T00:00:00Z' },
    },
  },
};
