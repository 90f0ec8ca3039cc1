import { INestApplication } from '@nestjs/common';
import { DocumentBuilder, OpenAPIObject, SwaggerModule } from '@nestjs/swagger';
import { TaskStatus } from '../enums/task-status.enum';
import { CompletionCallbackDto, HeartbeatCallbackDto, ProgressCallbackDto } from '../dto/callback.dto';
import { CONTRACT_ERROR_TABLE, ContractErrorCode, httpStatusOf } from '../errors/contract.exception';
import { TRANSITIONS } from '../state-machine/transition-table';

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
When a call breaks several rules, the first in this order answers: content type (415),
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
  fence; a repeated create answers the stored task and does not raise it). Reads (GET) carry the
  header but are never refused for it.
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
  does not match). A worker is configured for one mode.

## Idempotency and retries
create is idempotent on (task_id, attempt). The scheduler retries a task by sending create with
a higher attempt; the worker then starts the task again from CREATE (allowed from FAIL, NONE,
POSTPONE, PAUSE and RUNNING — a run still going is stopped first).

## Async workers
An async type answers \`running\` with RUNNING and reports later, either by the scheduler polling
status and heartbeat, or by calling the scheduler, whose base URL the worker is configured with
when it is deployed and registered: \`PUT {scheduler}/v1/tasks/{task_id}/notify\`
(CompletionCallbackDto), \`.../heartbeat\` (HeartbeatCallbackDto), \`.../progress\`
(ProgressCallbackDto), with the same X-Baton-Fence and authentication. A stale fence there is 409.
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
];

export function buildWorkerOpenApi(app: INestApplication): OpenAPIObject {
  const config = new DocumentBuilder()
    .setTitle('Baton worker contract')
    .setVersion('1.0.0')
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
    extraModels: [CompletionCallbackDto, HeartbeatCallbackDto, ProgressCallbackDto],
  });
  const schemas = doc.components?.schemas ?? {};
  for (const name of STRICT_SCHEMAS) {
    const schema = schemas[name];
    if (schema && !('$ref' in schema)) schema.additionalProperties = false;
  }
  return doc;
}
