import { HTTP_CODE_METADATA } from '@nestjs/common/constants';
import { ModulesContainer } from '@nestjs/core';
import { NestFastifyApplication } from '@nestjs/platform-fastify';
import { DocumentBuilder, OpenAPIObject, SwaggerModule } from '@nestjs/swagger';
import {
  CONTRACT_ERROR_TABLE,
  ContractErrorCode,
  ErrorEnvelopeDto,
  httpStatusOf,
} from '@baton/task-contract';
import { REQUEST_EXAMPLES } from './api-examples';
import { ACCESS, API_KEY_SCHEME, AccessRule } from './auth';
import { API_ERRORS } from './common';

const C = ContractErrorCode;

/** What the code says of a route, beyond what Nest's document shows. */
interface RouteFacts {
  /** The status of a success: `@HttpCode`, else Nest's default (201 for POST, 200 otherwise). */
  status?: number;
  access?: AccessRule;
  errors: ContractErrorCode[];
}

/** The error of an unknown id, by path parameter. */
const NOT_FOUND_BY_PARAM: Record<string, ContractErrorCode> = {
  task_id: C.TASK_NOT_FOUND,
  timer_id: C.NOT_FOUND,
  rule_id: C.NOT_FOUND,
  webhook_id: C.NOT_FOUND,
  topology: C.NOT_FOUND,
  run_id: C.NOT_FOUND,
  node: C.NOT_FOUND,
  message_id: C.NOT_FOUND,
  key_id: C.NOT_FOUND,
  worker_id: C.NOT_FOUND,
  task_type: C.NOT_FOUND,
  // A key of one tenant asking for another tenant's limits.
  tenant: C.NOT_FOUND,
};

type Schema = Record<string, unknown>;
type Operation = {
  operationId: string;
  parameters?: { in: string; name: string }[];
  requestBody?: { content: Record<string, { schema: Schema; examples?: unknown }> };
  responses: Record<string, { description: string; content?: Record<string, { schema?: Schema }> }>;
  security?: Record<string, string[]>[];
};

/** `operationId` (`<Controller>_<method>`, as Nest names them) → what the code says. */
function routeFacts(app: NestFastifyApplication): Map<string, RouteFacts> {
  const facts = new Map<string, RouteFacts>();
  for (const mod of app.get(ModulesContainer).values()) {
    for (const wrapper of mod.controllers.values()) {
      const type = wrapper.metatype as (new (...args: never[]) => unknown) | null;
      if (!type) continue;
      for (const name of Object.getOwnPropertyNames(type.prototype)) {
        const handler = (type.prototype as Record<string, unknown>)[name];
        if (name === 'constructor' || typeof handler !== 'function') continue;
        const meta = <T>(key: string): T | undefined =>
          (Reflect.getMetadata(key, handler) ?? Reflect.getMetadata(key, type)) as T | undefined;
        facts.set(`${type.name}_${name}`, {
          status: Reflect.getMetadata(HTTP_CODE_METADATA, handler) as number | undefined,
          access: meta<AccessRule>(ACCESS),
          errors: (Reflect.getMetadata(API_ERRORS, handler) as ContractErrorCode[]) ?? [],
        });
      }
    }
  }
  return facts;
}

/** `{code: 0, message: 'ok', data: <schema>}` */
function envelope(data: Schema): Schema {
  return {
    type: 'object',
    required: ['code', 'message', 'data'],
    properties: {
      code: { type: 'integer', enum: [0] },
      message: { type: 'string', example: 'ok' },
      data,
    },
  };
}

const isEnvelope = (s: Schema | undefined): boolean =>
  (s?.properties as Record<string, unknown> | undefined)?.code !== undefined;

/** Every error a route can answer: those of its kind, and those it declares. */
function errorsOf(op: Operation, facts: RouteFacts): ContractErrorCode[] {
  const codes = new Set<ContractErrorCode>();
  const params = op.parameters ?? [];
  if (facts.access === 'worker')
    [C.UNAUTHENTICATED, C.BAD_SIGNATURE, C.SIGNATURE_EXPIRED, C.SIGNATURE_REPLAYED].forEach((c) =>
      codes.add(c),
    );
  else if (facts.access !== 'public')
    [C.UNAUTHENTICATED, C.FORBIDDEN, C.RATE_LIMITED, C.OVERLOADED].forEach((c) => codes.add(c));
  // Every route but the probes, metrics and documents needs the database (BackendGate).
  if (facts.access !== 'public') codes.add(C.NOT_READY);
  // What Node's HTTP parser refuses before any route runs (contractClientErrors).
  [C.MALFORMED_REQUEST, C.REQUEST_TIMEOUT, C.HEADERS_TOO_LARGE].forEach((c) => codes.add(c));
  if (params.some((p) => p.in === 'query')) codes.add(C.VALIDATION_FAILED);
  for (const p of params.filter((x) => x.in === 'path')) {
    codes.add(C.BAD_URL);
    codes.add(C.URI_TOO_LONG);
    const missing = NOT_FOUND_BY_PARAM[p.name];
    if (missing !== undefined) codes.add(missing);
  }
  if (op.requestBody)
    [C.VALIDATION_FAILED, C.MALFORMED_BODY, C.PAYLOAD_TOO_LARGE, C.UNSUPPORTED_MEDIA_TYPE].forEach(
      (c) => codes.add(c),
    );
  facts.errors.forEach((c) => codes.add(c));
  codes.add(C.INTERNAL);
  return [...codes].sort((a, b) => a - b);
}

/** An example answer of every error code, referred to by the routes that can answer it. */
function errorExamples(): Record<string, { summary: string; value: unknown }> {
  return Object.fromEntries(
    (
      Object.values(C).filter((c) => typeof c === 'number' && c !== C.OK) as ContractErrorCode[]
    ).map((code) => [
      `error-${code}`,
      {
        summary: CONTRACT_ERROR_TABLE[code],
        value: { code, message: CONTRACT_ERROR_TABLE[code], data: null },
      },
    ]),
  );
}

/** One response per status, listing its codes, with an example of each. */
function errorResponses(
  codes: ContractErrorCode[],
  shared: Operation['responses'],
): Operation['responses'] {
  const responses: Operation['responses'] = {};
  for (const status of [...new Set(codes.map(httpStatusOf))]) {
    const mine = codes.filter((c) => httpStatusOf(c) === status);
    const examples = Object.fromEntries(
      mine.map((code) => [String(code), { $ref: `#/components/examples/error-${code}` }]),
    );
    // Shared by every route that answers the same codes under this status.
    const name = `error-${mine.join('-')}`;
    shared[name] ??= {
      description: mine.map((c) => `${c}: ${CONTRACT_ERROR_TABLE[c]}`).join('; '),
      content: {
        'application/json': {
          schema: { $ref: '#/components/schemas/ErrorEnvelopeDto' },
          examples,
        } as { schema: Schema },
      },
    };
    responses[String(status)] = { $ref: `#/components/responses/${name}` } as never;
  }
  return responses;
}

/**
 * Makes the document say what the API does: each success at its real status and in the
 * envelope, each error the route can answer (by status, with an example of every code), one
 * security requirement per scheme, and request bodies with an example that works as given.
 */
function tellTheTruth(doc: OpenAPIObject, facts: Map<string, RouteFacts>): OpenAPIObject {
  const shared: Operation['responses'] = {};
  for (const ops of Object.values(doc.paths)) {
    for (const raw of Object.values(ops as Record<string, unknown>)) {
      const op = raw as Operation;
      const f = facts.get(op.operationId);
      if (!f) throw new Error(`the API document has no route facts for ${op.operationId}`);
      const method = Object.entries(ops).find(([, v]) => v === raw)?.[0];
      const status = String(f.status ?? (method === 'post' ? 201 : 200));
      if (!op.responses[status] && op.responses['200']) {
        op.responses[status] = op.responses['200'];
        delete op.responses['200'];
      }
      for (const [code, response] of Object.entries(op.responses)) {
        const json = response.content?.['application/json'];
        if (!code.startsWith('2') || !json?.schema || isEnvelope(json.schema)) continue;
        json.schema = envelope(json.schema);
      }
      Object.assign(op.responses, errorResponses(errorsOf(op, f), shared));
      if (op.security) {
        const seen = new Set<string>();
        op.security = op.security.filter((s) => {
          const key = Object.keys(s).join(',');
          return !seen.has(key) && seen.add(key);
        });
      }
      const example = REQUEST_EXAMPLES[op.operationId];
      const body = op.requestBody?.content['application/json'];
      if (example && body) body.examples = example;
      else if (body && f.access !== 'worker')
        throw new Error(
          `${op.operationId} takes a body and has no request example (api-examples.ts)`,
        );
    }
  }
  doc.components = { ...doc.components, responses: shared as never };
  return doc;
}

/** The scheduler's public API document (also written to openapi/scheduler.v1.json). */
export function schedulerDocument(app: NestFastifyApplication): OpenAPIObject {
  const config = new DocumentBuilder()
    .setTitle('Baton scheduler')
    .setVersion('1.0.0')
    .setDescription(
      'The TaskScheduler API: tasks (create, batch, list, lifecycle log, attempts, pause, continue, cancel, retry, rollback, change), ' +
        'timers, task types, workers, tenants, API keys, the audit log, LogDumper rules and log ingest, and the callbacks async workers report to. ' +
        'Every answer is the envelope `{code, message, data}`: `code` 0 with the documented `data` on success; on an error, ' +
        'a code of the table of the worker contract (openapi/worker.v1.json), code / 100 being the HTTP status, each listed under the ' +
        'status it travels with. The public API takes an API key (`Authorization: Bearer <key>`); workers sign their calls.',
    )
    .addApiKey(
      {
        type: 'apiKey',
        in: 'header',
        name: 'X-Baton-Signature',
        description: 'worker-facing endpoints: signed like the worker contract',
      },
      'hmac',
    )
    .addBearerAuth(
      {
        type: 'http',
        scheme: 'bearer',
        description:
          "the public API: an API key (`POST /v1/api-keys`), or a person's access token (a JWT) from the identity provider set by BATON_OIDC_ISSUER; the key's role (viewer, operator, admin), or the one the person's groups give, decides what it may call, its tenant (if any) what it may see",
      },
      API_KEY_SCHEME,
    )
    .build();
  const doc = SwaggerModule.createDocument(app, config, { extraModels: [ErrorEnvelopeDto] });
  doc.components = { ...doc.components, examples: errorExamples() };
  return tellTheTruth(doc, routeFacts(app));
}
