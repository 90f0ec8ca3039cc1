import { INestApplication } from '@nestjs/common';
import { DocumentBuilder, OpenAPIObject, SwaggerModule } from '@nestjs/swagger';
import { TaskStatus } from '../enums/task-status.enum';
import {
  CompletionCallbackDto,
  HeartbeatCallbackDto,
  LogBatchDto,
  LogLineDto,
  ProgressCallbackDto,
} from '../dto/callback.dto';
import { CONTRACT_ERROR_TABLE, ContractErrorCode, httpStatusOf } from '../errors/contract.exception';
import { TRANSITIONS } from '../state-machine/transition-table';
import { WORKER_CONTRACT_CHANGELOG, WORKER_CONTRACT_VERSION } from './contract-changelog';

export * from './contract-changelog';

function errorTable(): string {
  const rows = (Object.keys(CONTRACT_ERROR_TABLE) as unknown as string[])
    .map(Number)
    .sort((a, b) => a - b)
    .map((code) => `| ${code} | ${httpStatusOf(code as ContractErrorCode)} | ${CONTRACT_ERROR_TABLE[code as ContractErrorCode]} |`);
  return ['| code | HTTP | meaning |', '|---|---|---|', ...rows].join('\n');
}

function transitionTable(): string {
  const rows = (Object.keys(TRANSITIONS) as TaskStatus[]).map(
    (from) => `| ${from} | ${TRANSITIONS[from].join(', ') || '(final)'} |`,
  );
  return ['| from | allowed next statuses |', '|---|---|', ...rows].join('\n');
}


function changelog(): string {
  return WORKER_CONTRACT_CHANGELOG.map(
    (v) =>
      `- **${v.version}** (${v.date})${v.breaking ? ' — breaking' : ''}:\n${v.changes
        .map(
          (c) =>
            `  - ${c.change}${c.checks.length > 0 ? ` (kit: ${c.checks.map((k) => `“${k}”`).join(', ')})` : ''}`,
        )
        .join('\n')}`,
  ).join('\n');
}

/** The prose of the worker document: everything a team needs besides the schemas. */
export const WORKER_CONTRACT_DESCRIPTION = `
The uniform task contract every Baton TaskWorker implements, in any language.
One path per task type: \`/v1/task/{task_type}\` under the worker's base URL. Bodies are
\`application/json\`; anything else is refused with 415.

## Calls
| call | method | query | body |
|---|---|---|---|
| create | POST | | CreateTaskRequestDto |
| query | GET | task_id and/or task_name | |
| status | GET | task_id, action=status | |
| heartbeat | GET | task_id, action=heartbeat | |
| progress | GET | task_id, action=progress | |
| summary | GET | task_id, action=summary | |
| notify | PUT | task_id | NotifyRequestDto |
| run | PUT | task_id, action=running | empty or ActionRequestDto |
| pause / continue | PUT | task_id, action=pause / continue | empty or ActionRequestDto |
| prepare | PUT | task_id, action=prepare | empty or ActionRequestDto |
| rollback | PUT | task_id, action=rollback | empty or ActionRequestDto |
| change | PUT | task_id, action=change | ChangeRequestDto |
| clean | PUT | task_id, action=clean | empty or ActionRequestDto |

Unknown fields in a body or query string are refused (400) at every level of a request schema
(they say \`additionalProperties: false\`); \`params\` and \`data\` are free JSON. A task type the
worker does not serve is 404 (code 40400) on every call; so is an unknown path or method. A task_id
the worker does not know for this task type is 404 (40401) on every call except create, query
(empty items) and status / heartbeat (task_status NONE, code 0). Bodies larger than the worker's
limit are 413 (the template worker allows 1 MiB).

### Order of checks
When a call breaks several rules, the first in this order answers: body size (413), content type (415),
authentication (401), query string (400), X-Baton-Fence header present (400, 40002), task type
(404, 40400), body (400), task known (404, 40401; on create, 409 40902 when the id belongs to another
type), fence not lower than seen (409, 40901), status allows the call (409, 40900), optional call
implemented (501).

## Envelope
Every answer, success or error: \`{"code": 0, "message": "ok", "data": {...}}\`. A non-zero code
comes from the table below and \`floor(code / 100)\` is the HTTP status it is sent with.

${errorTable()}

## Statuses and transitions
A call whose status change the table does not allow is refused with 409 (code 40900) and changes
nothing. Each PUT action names the statuses it starts from (see the operation); those lists are
narrower than the table, and both must hold (e.g. PAUSE → RUNNING happens only by \`continue\`).
Some rows are the scheduler's: INIT (recorded, not yet sent to a worker) and NONE (the worker
answered NONE for a task it does not know) are statuses the scheduler records; a worker never
sets them. \`Postpose\` is accepted on input as an alias of POSTPONE (in
\`process_arg.task_status\`).

${transitionTable()}

## Headers the scheduler sends
- \`X-Baton-Fence\` (integer): fencing token of the lock the scheduler holds. Required on POST
  and PUT (400, code 40002, when absent or malformed). The worker keeps the highest fence seen per
  task; a lower one is refused with 409 (code 40901) and changes nothing. Equal or higher is
  accepted and remembered when the call succeeds (a refused call changes nothing, not even the
  fence). A repeated create of the attempt held answers the stored task and **raises** its fence
  when the new one is higher: the holder it replaced is refused from then on. Reads (GET) carry
  the header but are never refused for it.
- \`X-Request-Id\`, \`traceparent\` (W3C): for logs and traces.
- Authentication, one of:
  - **token**: \`Authorization: Bearer <shared token>\`;
  - **hmac**: \`X-Baton-Timestamp\` (milliseconds since the epoch), \`X-Baton-Nonce\` (16–64
    characters of [A-Za-z0-9_-], random per call) and
    \`X-Baton-Signature: v1=<lower-case hex HMAC-SHA256(UTF-8 secret, canonical)>\` where canonical is
    \`METHOD + "\\n" + path-with-query + "\\n" + timestamp + "\\n" + nonce + "\\n" + fence + "\\n" + hex(SHA-256(raw body))\`
    (path-with-query is the request target exactly as sent, not decoded; fence is the
    X-Baton-Fence header as sent, or empty when absent, so it cannot be raised on the way; the body
    hash of an empty body is that of the empty string). A timestamp more than the
    replay window (default 300 s) away from the worker's clock is refused (40102); a signature
    already accepted once is refused (40103).
  Missing or wrong credentials, or a malformed nonce: 401 (40100, or 40101 for a signature that
  does not match). A worker is configured for one mode. The HMAC secret and the token are at
  least 16 characters, on the scheduler and on the worker alike (a shorter one is refused at
  start-up).

## Idempotency and attempts
create is idempotent on (task_id, attempt): the same or a lower attempt answers the task held
(its fence raised as above) and changes nothing else. The scheduler starts a new attempt by
sending create with a higher attempt; the worker then starts the task again from CREATE with the
new body. That is allowed from every status the transition table lets move to CREATE — FAIL,
NONE, POSTPONE, PAUSE, RUNNING, SUCCESS (the next life of a permanent task) and FINISH (a re-run)
— and over CREATE or PREPARE (an attempt that never ran); from ROLLBACK it is 409 (40900). A run
of the old attempt still going is stopped before the new attempt is recorded: one task never
runs twice at the same time on a worker.

## Crash recovery (normative)
- **Persist.** A worker keeps its tasks (status, attempt, fence, params, outcome) on durable
  storage and writes a change before it answers the call that made it. A worker that keeps
  nothing still works, with the weaker behaviour below (NONE).
- **In-flight runs.** A run going when the worker's process died is lost with it. After a
  restart the worker does **not** start it again on its own (only the scheduler starts attempts;
  it may have moved the task elsewhere meanwhile). It answers the task as it stored it: status
  RUNNING, and on \`heartbeat\` \`alive: false\` with \`execution_lost: true\`. It answers
  \`execution_lost: true\` only when no execution of the attempt exists in its process, never for
  a run that is merely late to beat. A worker that stops its runs because it is shutting down
  (SIGTERM, a deploy) writes no outcome for them either: they are lost runs, not failures.
- **The scheduler's reaction.** On its next poll (see Polling) a task answered with
  \`execution_lost: true\` is recovered at once, not after the heartbeat timeout: the attempt is
  given up (the worker is told to drop it: \`notify\` cancel with that attempt's fence) and a new
  attempt is created, on the restarted worker or another. A worker that forgot the task answers
  it unknown (query empty, status NONE); the scheduler records NONE and creates a new attempt the
  same way. A task answered \`alive: false\` without \`execution_lost\` may still be running: it is
  timed out only after its type's heartbeat timeout (see Timing), under the type's policy.
- **Recovery is not a retry.** The attempt given up produced no outcome: the work did not fail,
  its process did. The new attempt is counted as a move, like an attempt that never reached its
  worker, never against \`max_retry\`; otherwise a crash or a deploy would end every task with the
  default \`max_retry\` 0 in FAIL, losing work the contract promises to run at least once. The
  first recovery of a task starts at once, later ones back off (the type's backoff). Because a
  recovered run starts again from the beginning, \`run\` must be safe to repeat (at least once).

## Timing
The scheduler states the timing it applies in its answer to a worker's registration
(\`POST /v1/workers\`, field \`timing\`): \`heartbeat_interval_ms\` and \`stale_after_ms\` for the
registration heartbeat (\`PUT /v1/workers/{worker_id}/heartbeat\`; a worker silent for
\`stale_after_ms\` gets no new attempts), \`poll_interval_ms\`, and per task type
\`heartbeat_interval_ms\` and \`heartbeat_timeout_ms\`: a RUNNING attempt with no sign of life (a
heartbeat or progress callback, or \`alive: true\` when polled) for \`heartbeat_timeout_ms\` is
timed out. The intervals asked for are a third of the bounds; a worker beats at least that
often. Defaults: registration heartbeat every 10 s, stale after 30 s, poll every 2 s, heartbeat
timeout 30 s per type (changed per type with \`PATCH /v1/task-types/{task_type}\`).

## Polling
For each RUNNING attempt of an async type the scheduler calls, every \`poll_interval_ms\`,
callbacks or not: **query** (\`GET ?task_id=\`; an outcome found there is taken as reported),
then, while the task is still RUNNING or PAUSE there, **heartbeat** (\`action=heartbeat\`). It
does not call \`action=status\` to poll (status is for people and tools). A run that exceeds its
\`deadline_second\` gets \`notify\` deadline.

## Callbacks
An async worker reports to the scheduler's base URL, which it is configured with when deployed:
\`PUT {scheduler}/v1/tasks/{task_id}/notify\` (CompletionCallbackDto: attempt and SUCCESS or
FAIL, with result or error), \`.../heartbeat\` (HeartbeatCallbackDto) and \`.../progress\`
(ProgressCallbackDto; also a heartbeat), authenticated as the scheduler's calls are.
- **Fence**: \`X-Baton-Fence\` is the highest fence the worker accepted for the task, and
  \`attempt\` the attempt that ran. The scheduler takes a report for the task's current attempt
  with any fence that attempt was driven with.
- **Answer**: \`{"code": 0, "data": {"task_id", "accepted"}}\`; \`accepted: false\` means the
  scheduler already had an outcome for the attempt (a repeat, or the poll found it first):
  nothing to do. 409 (40901) means the attempt is no longer the task's current one (the
  scheduler gave it up or replaced it): drop the report and do not retry it; the scheduler
  tells the worker to drop that attempt (\`notify\` cancel with its fence) if it still runs. 404:
  the scheduler does not know the task; drop it.
- **Retry**: an outcome is retried on a network error, a timeout or a 5xx, a few times with
  backoff (the library: 4 tries, 0.2 s, 0.8 s, 3.2 s), then left to the scheduler's poll, which
  finds it; heartbeats and progress are not retried (the next one follows).
- **Stops the scheduler asked for are not reported**: a run stopped by \`notify\` cancel or
  deadline, or by a new attempt, has its outcome in the answer to that call; the scheduler does
  not wait for a callback.
- **Logs** (1.2.0, any worker, sync or async): \`PUT {scheduler}/v1/tasks/{task_id}/logs\`
  (LogBatchDto: the attempt and up to 500 lines, each with its \`seq\` within the attempt from 0,
  \`at\`, \`level\` debug/info/warn/error, \`message\` and optional \`fields\`), signed and fenced
  like the other callbacks, with the fence the attempt was driven with. Lines of an attempt that
  has ended are taken (they ship after it); a line sent again with the same seq is kept once, so
  a batch is retried whole, in order, on a network error, a timeout or a 5xx, for as long as the
  worker lives (the library keeps them across a scheduler restart). 409 (40901): the fence is older
  than the attempt or the attempt is not one the scheduler gave this task: drop the batch. The
  answer: \`{"task_id", "accepted", "duplicates"}\`. The scheduler keeps at most its caps per
  attempt (by default 10,000 lines and 1 MiB) and drops the oldest past them, saying how many.
  A worker running many short attempts sends them together instead: \`PUT
  {scheduler}/v1/attempt-logs\` (AttemptLogBatchesDto: up to 100 batches and 2,000 lines within
  the scheduler's body limits, 1 MiB and 20,000 JSON members by default; each
  batch with its \`task_id\`, \`attempt\` and \`fence\` in the body, which the signature covers),
  answered with a verdict per batch in order (\`accepted\`/\`duplicates\`, or \`refused\`:
  \`unknown\` or \`stale\`, to drop as a 409 says); the whole call is retried on a network error,
  a timeout or a 5xx. The worker library sends this way.

## Pausing
Before its run, every task can be paused: the scheduler holds it and does not start the
attempt, and needs nothing of the worker (a worker asked to \`pause\` a task in CREATE, PREPARE or
POSTPONE pauses it). A type declares at registration that a RUNNING attempt can be paused and
continued by listing \`pause\` (and \`continue\`) in \`implements\`; only async types can. A type
that does not is "pausable before the run, not while running": the scheduler refuses a pause of
its running task (501) without calling the worker, and the worker answers 501 if asked.

## Async workers
An async type answers \`running\` with RUNNING and its outcome comes later: by a callback (see
Callbacks), or found by the scheduler's poll (see Polling).

## Changelog
${changelog()}
`.trim();

/** Builds the worker contract's OpenAPI document from the mounted controller. */
/** Request schemas: the worker refuses fields they do not name. */
const STRICT_SCHEMAS = [
  'CreateTaskRequestDto',
  'CreateInfoDto',
  'ProcessArgDto',
  'ActionRequestDto',
  'ChangeRequestDto',
  'NotifyRequestDto',
  'CompletionCallbackDto',
  'CallbackErrorDto',
  'HeartbeatCallbackDto',
  'ProgressCallbackDto',
  'LogBatchDto',
  'LogLineDto',
];

export function buildWorkerOpenApi(app: INestApplication): OpenAPIObject {
  const config = new DocumentBuilder()
    .setTitle('Baton worker contract')
    .setVersion(WORKER_CONTRACT_VERSION)
    .setDescription(WORKER_CONTRACT_DESCRIPTION)
    .addBearerAuth(
      { type: 'http', scheme: 'bearer', bearerFormat: 'opaque shared token', description: 'shared token' },
      'token',
    )
    .addApiKey(
      {
        type: 'apiKey',
        in: 'header',
        name: 'X-Baton-Signature',
        description: 'v1=<hex HMAC-SHA256>, with X-Baton-Timestamp and X-Baton-Nonce',
      },
      'hmac',
    )
    .build();
  const doc = SwaggerModule.createDocument(app, config, {
    operationIdFactory: (_controller, method) => method,
    extraModels: [
      CompletionCallbackDto,
      HeartbeatCallbackDto,
      ProgressCallbackDto,
      LogBatchDto,
      LogLineDto,
    ],
  });
  const schemas = doc.components?.schemas ?? {};
  for (const name of STRICT_SCHEMAS) {
    const schema = schemas[name];
    if (schema && !('$ref' in schema)) schema.additionalProperties = false;
  }
  return doc;
}
