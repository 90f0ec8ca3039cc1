/*
 * The worker contract's versions and what changed in each, with the kit checks that test it.
 * Plain data (no framework): the registration client reads the version from here.
 */

/**
 * One behaviour change of a version, with the conformance kit checks that test it (by name).
 * `npm run openapi` refuses a kit check added, changed or removed that no line of the newest
 * version names (see `checkChangeProblems`). A change no kit check can see (a document section,
 * a configuration rule) says so with `untested` and why.
 */
export interface ContractChange {
  change: string;
  checks: readonly string[];
  untested?: string;
}

/** One published version of the worker contract. */
export interface ContractVersion {
  version: string;
  date: string;
  /** A change that a worker or scheduler of the previous version may not survive. */
  breaking: boolean;
  changes: readonly ContractChange[];
}

/**
 * The worker contract's versions, newest first. The document's \`info.version\` is the newest;
 * \`npm run openapi\` refuses a breaking change of the document unless the version moved.
 */
export const WORKER_CONTRACT_CHANGELOG: readonly ContractVersion[] = [
  {
    version: '1.4.0',
    date: '2026-11-29',
    breaking: false,
    changes: [
      {
        change:
          "a registration may declare, per task type, `params_schema` and `result_schema` (JSON Schema draft 2020-12, at most 60 KiB): the scheduler then refuses a task whose params break the schema before any worker is called (400 `40000`, each problem's JSON pointer in `data.errors`), and shows both with the type; a scheduler before 1.4.0 refuses the fields, and the worker library registers again without them",
        checks: [],
        untested:
          'optional, and checked by the scheduler, not asked of a worker: test/in-process/params-schema.int-spec.ts registers schemas and makes tasks through every way the scheduler has',
      },
      {
        change:
          'a worker may answer 413 to a body over its limit and close the connection before the body is all sent (HTTP allows it): the kit asks again, up to three times, when its write fails that way, instead of counting the closed connection against the worker',
        checks: ['body: a body over the limit is refused with 413'],
      },
    ],
  },
  {
    version: '1.3.0',
    date: '2026-11-28',
    breaking: false,
    changes: [
      {
        change:
          "what the HTTP parser refuses before any route runs is answered in the envelope, and the connection closed: headers past the server's size limit 431 (`43100`), a malformed request line or header 400 (`40004`), a request not received in time 408 (`40800`) (before: Fastify's own JSON, outside the envelope)",
        checks: [],
        untested:
          'the kit speaks HTTP through a client that cannot send such bytes; test/in-process/hostile-input.int-spec.ts writes them on a socket to the template worker and the scheduler',
      },
      {
        change:
          'the worker library refuses `null` (400, `40000`, "<field> must not be null") in a body field the contract does not document as nullable, as the scheduler does (before: taken as if the field were absent)',
        checks: [],
        untested:
          'a rule of the worker library, not asked of every worker: test/in-process/hostile-input.int-spec.ts sends null in each field of each body to the template worker',
      },
    ],
  },
  {
    version: '1.2.0',
    date: '2026-11-28',
    breaking: false,
    changes: [
      {
        change:
          'a clean of a task already in FINISH is a repeat: it answers FINISH and changes nothing (before: refused with 409, which a scheduler that crashed between the clean and its own FINISH met)',
        checks: ['clean: a repeat answers FINISH and changes nothing'],
      },
      {
        change:
          'registration (`POST /v1/workers` of the scheduler) carries `contract_version`; a scheduler refuses a worker below its minimum (1.1.0 unless set otherwise), and takes a registration without it as 1.0.0',
        checks: [
          'worker side: registers with its id, URL, contract version, task types and capacity',
        ],
      },
      {
        change:
          'logs: a worker may send the lines it logged for an attempt (`PUT {scheduler}/v1/tasks/{task_id}/logs`, LogBatchDto), signed and fenced like the other callbacks, numbered by `seq` so a resend is kept once, or the lines of many attempts in one call (`PUT {scheduler}/v1/attempt-logs`, each batch with its task, attempt and fence); the scheduler keeps them per attempt within its caps',
        checks: ['worker side: sends log lines numbered from 0, in order, again after a 5xx'],
      },
      {
        change:
          'callbacks (heartbeat, progress, logs as well as notify) carry the highest fence accepted for the task, also one accepted while the run goes on (before: the worker library sent the fence its run started with, but in notify)',
        checks: ['worker side: callbacks carry the highest fence accepted and the attempt that ran'],
      },
      {
        change:
          'what a worker sends is checked by the kit against a stand-in scheduler: rules the contract already stated, now tested: it follows the registration answer\'s timing, retries an outcome report on a 5xx or a dropped connection, drops one answered 409, and on SIGTERM stops without reporting its runs failed',
        checks: [
          'worker side: heartbeats as often as the registration answer asks',
          'worker side: retries an outcome report after a 5xx and after a dropped connection',
          'worker side: drops an outcome report answered 409 (not retried)',
          'worker side: on SIGTERM, exits without reporting its runs failed',
        ],
      },
      {
        change:
          'a run call that timed out has an unknown outcome: the scheduler asks the worker (query, heartbeat) before it records anything, and records what the worker has, SUCCESS included, even past the deadline',
        checks: [],
        untested:
          'what the scheduler does: its own suite covers it (test/outcome-unknown.e2e-spec.ts); a worker answers query as before',
      },
      {
        change:
          '`execution_lost` is required, not optional: a scheduler recovers a run lost with the worker\'s process only through it (a worker without it has such runs fail by heartbeat timeout)',
        checks: [
          'restart: the worker keeps its tasks and says which runs it lost',
          'heartbeat of a run going on: alive, and not execution_lost',
        ],
      },
    ],
  },
  {
    version: '1.1.0',
    date: '2026-11-26',
    breaking: false,
    changes: [
      {
        change:
          'heartbeat answers `execution_lost`: a run that died with an earlier process of the worker',
        checks: ['restart: the worker keeps its tasks and says which runs it lost'],
      },
      {
        change: 'normative sections: crash recovery, timing, polling, callbacks, pausing',
        checks: [],
        untested: 'words of the document',
      },
      {
        change:
          'a repeated create of the attempt held raises the fence when the new one is higher (as workers of 1.0.0 built with the library did)',
        checks: [
          're-sent create: the same attempt answers what is there; a newer one replaces an attempt that never ran',
        ],
      },
      {
        change:
          'a higher attempt re-creates the task from SUCCESS and FINISH (1.0.0 refused it from FINISH)',
        checks: ['re-run: a higher attempt re-creates a finished task'],
      },
      {
        change: 'the HMAC secret and token are at least 16 characters',
        checks: [],
        untested: 'a rule of configuration, which no call shows',
      },
    ],
  },
  {
    version: '1.0.0',
    date: '2026-11-01',
    breaking: false,
    changes: [{ change: 'the first published worker contract', checks: [], untested: 'the start' }],
  },
];

export const WORKER_CONTRACT_VERSION = WORKER_CONTRACT_CHANGELOG[0].version;
