import fastifyHelmet from '@fastify/helmet';
import fastifyRateLimit from '@fastify/rate-limit';
import { NestFactory } from '@nestjs/core';
import { Logger as PinoLogger } from 'nestjs-pino';
import { FastifyAdapter, NestFastifyApplication } from '@nestjs/platform-fastify';
import { SwaggerModule } from '@nestjs/swagger';
import {
  AttemptLogBatchesDto,
  CompletionCallbackDto,
  ContractException,
  ContractErrorCode,
  FastValidator,
  HeartbeatCallbackDto,
  LogBatchDto,
  ProgressCallbackDto,
  compileFastValidator,
  contractClientErrors,
  contractFrameworkErrors,
  describeValidationErrors,
  limitJsonShape,
} from '@baton/task-contract';
import { schedulerDocument } from './api-document';
import { SchedulerAppModule } from './app.module';
import { ApiKeysService, OidcTokensService, bearerToken, looksLikeJwt } from './auth';
import { Clock, FastValidationPipe, Lifecycle, Overload } from './common';
import { BackendErrorFilter, BackendGate, needsDatabase } from './health';
import { CREATE_FAST_VALIDATORS } from './tasks';
import { RegisterWorkerDto } from './workers';
import { SchedulerConfig } from './config';

export { schedulerDocument };

/** The bodies workers send: their tolerance of `null` is the worker contract's, not the API's. */
const WORKER_FACING_BODIES: ReadonlySet<unknown> = new Set([
  RegisterWorkerDto,
  CompletionCallbackDto,
  HeartbeatCallbackDto,
  ProgressCallbackDto,
]);

/**
 * Precompiled checks (from the DTOs' decorators) for the hot bodies: creates, and what every
 * run's worker sends (its callbacks and log batches, a call per attempt each).
 */
const FAST_VALIDATORS = new Map<unknown, FastValidator<object>>([
  ...CREATE_FAST_VALIDATORS,
  ...[
    LogBatchDto,
    AttemptLogBatchesDto,
    CompletionCallbackDto,
    HeartbeatCallbackDto,
    ProgressCallbackDto,
  ].map((dto) => [dto, compileFastValidator(dto as new () => object)] as const),
]);

/** The calls workers make: registration, heartbeat, deregistration, their task callbacks and logs. */
const WORKER_CALL =
  /^(POST \/v1\/workers\/?|PUT \/v1\/workers\/[^/?]+\/heartbeat|DELETE \/v1\/workers\/[^/?]+|PUT \/v1\/tasks\/[^/?]+\/(notify|heartbeat|progress|logs)|PUT \/v1\/attempt-logs\/?)(\?|$)/;

/** The long-lived live-view stream. */
const LIVE_STREAM = /^\/v1\/task-changes\/stream(\?|$)/;

/** Requests the API may turn away when overloaded or over a rate: not probes, metrics or workers' calls. */
function shedable(method: string, url: string): boolean {
  if (url.startsWith('/health') || url.startsWith('/metrics')) return false;
  if (WORKER_CALL.test(`${method} ${url}`)) return false;
  return url.startsWith('/v1/');
}

/**
 * Builds the scheduler app: Fastify, raw bodies (signatures cover the exact bytes), bodies' shape
 * checked before they are parsed, strict validation (unknown fields refused), the
 * `{code, message, data}` envelope for every error (URL errors included), and Swagger UI at /docs.
 */
export async function createSchedulerApp(
  config: SchedulerConfig,
  logger = true,
  /**
   * For tests in one process: `clock`, the app's time source (a ManualClock); `docs: false` leaves
   * Swagger UI out (its static files load an ES module Jest cannot).
   */
  options: { clock?: Clock; docs?: boolean } = {},
): Promise<NestFastifyApplication> {
  const { clock, docs = true } = options;
  const app = await NestFactory.create<NestFastifyApplication>(
    SchedulerAppModule.forConfig(config, clock),
    new FastifyAdapter({
      bodyLimit: config.bodyLimitBytes,
      frameworkErrors: contractFrameworkErrors,
      clientErrorHandler: contractClientErrors,
      // The server closes last on SIGTERM, after the work in hand was handed back and the
      // database closed: a connection still open then has nothing left to be answered with. A
      // browser on Swagger UI kept one that Node did not count as idle, and every stop waited
      // for its keep-alive timeout (72 s), past a Kubernetes grace period.
      forceCloseConnections: true,
    }),
    // The app's own log (pino, LoggingModule) takes over once built; lines before wait for it.
    { rawBody: true, ...(logger ? { bufferLogs: true } : { logger: ['error'] }) },
  );
  if (logger) app.useLogger(app.get(PinoLogger));
  app.useGlobalPipes(
    new FastValidationPipe(
      {
        whitelist: true,
        forbidNonWhitelisted: true,
        transform: true,
        exceptionFactory: (errors) => {
          const lines = describeValidationErrors(errors);
          return new ContractException(ContractErrorCode.VALIDATION_FAILED, lines.join('; '), {
            errors: lines,
          });
        },
      },
      FAST_VALIDATORS,
      WORKER_FACING_BODIES,
    ),
  );
  app.useGlobalFilters(new BackendErrorFilter(app.get(BackendGate)));
  const fastify = app.getHttpAdapter().getInstance();
  // A body too deep or too wide is refused on its bytes, before parsing and validation.
  limitJsonShape(fastify, config.jsonShape);
  // Once shutting down, every answer closes its connection: clients' kept-alive sockets would
  // otherwise hold the server open for their idle timeout, and keep bringing requests here.
  const lifecycle = app.get(Lifecycle);
  fastify.addHook('onSend', async (_req, reply) => {
    if (lifecycle.draining) reply.header('connection', 'close');
  });
  // Security headers first: every answer carries them, the 503 and 429 refusals below included.
  // Swagger UI's page sets its own styles and an init script from /docs: both are 'self'.
  await app.register(fastifyHelmet, {
    contentSecurityPolicy: {
      directives: { 'img-src': ["'self'", 'data:', 'validator.swagger.io'] },
    },
  });
  // Back-pressure: past its limits the API answers 503 at once, before reading the body, rather
  // than letting requests queue until their clients time out. Probes, metrics and the workers'
  // own calls (registration, heartbeats, reports) are always let through.
  const overload = app.get(Overload);
  fastify.addHook('onRequest', async (req, reply) => {
    if (!shedable(req.method, req.url)) return;
    const admitted = overload.admit();
    if ('done' in admitted) {
      // A live stream stays open for as long as its page: it counts as one request only while
      // it is being set up, not for its whole life (TaskChangeStream caps how many there are).
      if (LIVE_STREAM.test(req.url)) admitted.done();
      else reply.raw.once('close', admitted.done);
      return;
    }
    const retryAfter = Math.max(1, Math.ceil(overload.lagMs / 1000));
    return reply
      .status(503)
      .header('retry-after', String(retryAfter))
      .header('content-type', 'application/json')
      .send({
        code: ContractErrorCode.OVERLOADED,
        message: `overloaded: ${admitted.refused}; nothing was done, retry in ${retryAfter} s`,
        data: { retry_after_seconds: retryAfter },
      });
  });
  // A database found down: every request that needs it is refused at once (503, Retry-After),
  // before it is read, rather than waiting out a partition (BackendGate).
  const gate = app.get(BackendGate);
  fastify.addHook('onRequest', async (req, reply) => {
    const refused = needsDatabase(req.url) ? gate.refusal('database') : undefined;
    if (!refused) return;
    return reply
      .status(refused.httpStatus)
      .header('retry-after', String(gate.retryAfterSeconds))
      .header('content-type', 'application/json')
      .send({ code: refused.code, message: refused.message, data: refused.data });
  });
  await protect(app, config);
  app.enableShutdownHooks();
  // Built on the first request for it, not at every start.
  if (docs) SwaggerModule.setup('docs', app, () => schedulerDocument(app));
  return app;
}

/** Shaped like Fastify's own errors, which Nest answers with their status and message. */
function tooMany(message: string): Error & { statusCode: number } {
  const err = Object.assign(new Error(message), { statusCode: 429 });
  err.name = 'FastifyError';
  return err;
}

/**
 * A request rate limit per API key on the public API (per address for requests without a key;
 * per tenant for the keys of one tenant): past it, 429 (42900) with Retry-After, before
 * anything is read. Probes, metrics and workers' calls are not limited (the back-pressure above
 * protects them). The limit is per instance: three instances allow three times it.
 */
async function protect(app: NestFastifyApplication, config: SchedulerConfig): Promise<void> {
  const perSec = config.api.rateLimitPerSec;
  if (perSec === 0) return;
  const keys = app.get(ApiKeysService);
  const oidc = app.get(OidcTokensService);
  await app.register(fastifyRateLimit, {
    max: perSec,
    timeWindow: 1000,
    allowList: (req) => !shedable(req.method, req.url),
    // Counted per API key once the key is known to be one (a verified key is cached for a
    // second), per address otherwise: made-up keys cannot each get a bucket of their own. The
    // keys of one tenant share its bucket: a tenant does not get more by making more keys.
    keyGenerator: async (req) => {
      const token = bearerToken(req.headers.authorization);
      if (!token || config.apiAuth.mode !== 'keys') return `ip:${req.ip}`;
      // A person's access token counts as that person (or their tenant), not as the address of
      // the console every signed-in person comes through.
      const found =
        oidc.enabled && looksLikeJwt(token) ? await oidc.verify(token) : await keys.verify(token);
      if (typeof found === 'string') return `ip:${req.ip}`;
      if (found.tenant !== null) return `tenant:${found.tenant}`;
      return found.user ? `user:${found.user}` : `key:${found.keyId}`;
    },
    errorResponseBuilder: (_req, ctx) =>
      tooMany(
        `more than ${ctx.max} requests a second with this API key (or from this address); retry after ${Math.ceil(ctx.ttl / 1000)} s`,
      ),
  });
}
