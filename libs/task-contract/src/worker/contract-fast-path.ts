import { HttpException, INestApplication, Logger } from '@nestjs/common';
import { IncomingMessage, Server, ServerResponse, createServer } from 'node:http';
import { TASK_TYPE_PATTERN } from '../dto/create-info.dto';
import { ok } from '../dto/envelope.dto';
import { callerGone } from '../util/caller-gone';
import { HEADER } from '../util/headers';
import { validateDto } from '../util/validate';
import { RequestVerifier } from './auth/request-auth';
import { errorEnvelope } from './contract-exception.filter';
import { checkTypeParam, requireFence } from './task-worker.controller';
import { TaskWorkerService } from './task-worker.service';
import { WriteQueryDto } from './worker-query.dto';
import { OpenSpan, tracing } from '../util/tracing';
import { endWorkerSpan, startWorkerSpan } from './worker-tracing';

/** Parses a JSON body as the app's own parser does, calling back with an error carrying a status. */
type JsonParser = (
  req: unknown,
  body: Buffer,
  done: (err: (Error & { statusCode?: number }) | null, value?: unknown) => void,
) => void;

/** The options Fastify hands its `serverFactory` (those this server honours or refuses). */
interface ServerOptions {
  https?: unknown;
  http2?: unknown;
  http?: object;
  keepAliveTimeout?: number;
  requestTimeout?: number;
  connectionTimeout?: number;
  maxRequestsPerSocket?: number;
}

interface Target {
  service: TaskWorkerService;
  verifier: RequestVerifier;
  parseJson: JsonParser;
  bodyLimit: number;
}

/** Fastify's defaults for a server it makes itself; a server from `serverFactory` must set them. */
const KEEP_ALIVE_TIMEOUT_MS = 72_000;

const PATH_PREFIX = '/v1/task/';
/** A query this simple reads the same under any parser: no escapes, no `+`, no repeats. */
const PLAIN_QUERY = /^[A-Za-z0-9_.=&-]*$/;
const JSON_TYPE = /^application\/json(?:\s*;\s*charset=utf-8)?$/i;

/** The query parameters of a PUT that the fast path serves, when they are plain. */
function plainQuery(search: string): Record<string, string> | undefined {
  if (!PLAIN_QUERY.test(search)) return undefined;
  const out: Record<string, string> = {};
  for (const pair of search.split('&')) {
    const eq = pair.indexOf('=');
    if (eq <= 0) return undefined;
    const key = pair.slice(0, eq);
    if (key !== 'task_id' && key !== 'action' && key !== 'task_type') return undefined;
    if (key in out) return undefined;
    out[key] = pair.slice(eq + 1);
  }
  return out;
}

/**
 * Serves the contract's hot calls straight from Node's HTTP server, ahead of Fastify and Nest:
 * `POST /v1/task/{type}` (create, and create_run with `?action=running`) and
 * `PUT /v1/task/{type}?task_id=…&action=running`. Each request is answered exactly as the
 * controller would answer it — the same body parser, the same auth check, the same service call,
 * the same envelope for every error — without the router, guards, pipes and per-call reflection
 * around it. Anything it does not recognise at a glance (another method or action, an escaped path
 * or query, another content type, a chunked or empty body, `Expect`) goes to the app untouched,
 * before a byte of its body is read.
 *
 * @example
 * const fastPath = new ContractFastPath();
 * const app = await NestFactory.create(AppModule,
 *   new FastifyAdapter({ serverFactory: fastPath.serverFactory }), { rawBody: true });
 * fastPath.attach(app);
 */
export class ContractFastPath {
  private target: Target | undefined;
  private count = 0;

  /** Requests answered here so far (the rest went to the app). */
  get served(): number {
    return this.count;
  }
  private readonly logger = new Logger('ContractExceptionFilter');

  /** For Fastify's `serverFactory`: a plain HTTP server that tries the fast path first. */
  readonly serverFactory = (
    handler: (req: IncomingMessage, res: ServerResponse) => void,
    opts: ServerOptions = {},
  ): Server => {
    if (opts.https || opts.http2)
      throw new Error(
        'ContractFastPath serves plain HTTP only: leave it out of an https or http2 app',
      );
    const server = createServer(opts.http ?? {}, (req, res) => {
      if (!this.take(req, res)) handler(req, res);
    });
    // What Fastify sets on a server it makes itself.
    server.keepAliveTimeout = opts.keepAliveTimeout ?? KEEP_ALIVE_TIMEOUT_MS;
    server.requestTimeout = opts.requestTimeout ?? 0;
    server.setTimeout(opts.connectionTimeout ?? 0);
    if (opts.maxRequestsPerSocket && opts.maxRequestsPerSocket > 0)
      server.maxRequestsPerSocket = opts.maxRequestsPerSocket;
    return server;
  };

  /** Starts serving through the app's contract service (until then every call goes to the app). */
  attach(app: INestApplication): void {
    const fastify = app.getHttpAdapter().getInstance() as {
      getDefaultJsonParser(proto: string, ctor: string): JsonParser;
      addHook(name: 'preClose', hook: (done: () => void) => void): void;
      initialConfig: {
        bodyLimit?: number;
        onProtoPoisoning?: string;
        onConstructorPoisoning?: string;
      };
    };
    const config = fastify.initialConfig;
    this.target = {
      service: app.get(TaskWorkerService),
      verifier: app.get(RequestVerifier),
      // The parser the app registers for JSON (Nest's rawBody parser wraps this one).
      parseJson: fastify.getDefaultJsonParser(
        config.onProtoPoisoning ?? 'error',
        config.onConstructorPoisoning ?? 'error',
      ),
      bodyLimit: config.bodyLimit ?? 1_048_576,
    };
    // Once the app closes, Fastify answers 503 and closes connections: every call goes there.
    fastify.addHook('preClose', (done) => {
      this.target = undefined;
      done();
    });
  }

  /** True when the request is the fast path's to answer; it then is answered, whatever happens. */
  private take(req: IncomingMessage, res: ServerResponse): boolean {
    const target = this.target;
    const method = req.method;
    const url = req.url;
    if (!target || (method !== 'POST' && method !== 'PUT') || !url?.startsWith(PATH_PREFIX))
      return false;
    const q = url.indexOf('?');
    const taskType = url.slice(PATH_PREFIX.length, q < 0 ? undefined : q);
    const search = q < 0 ? '' : url.slice(q + 1);
    if (!TASK_TYPE_PATTERN.test(taskType)) return false;
    const headers = req.headers;
    const length = headers['content-length'];
    if (
      !JSON_TYPE.test(headers['content-type'] ?? '') ||
      length === undefined ||
      !/^[1-9]\d{0,9}$/.test(length) ||
      Number(length) > target.bodyLimit ||
      headers['transfer-encoding'] !== undefined ||
      headers.expect !== undefined
    )
      return false;
    // The handler's own checks, in the controller's order, then the service call.
    const fenceOf = (): number => requireFence(req.headers[HEADER.FENCE] as string | undefined);
    let call: (body: unknown) => Promise<unknown>;
    if (method === 'POST') {
      if (search === '') call = (body) => target.service.create(taskType, fenceOf(), body);
      else if (search === 'action=running')
        call = (body) => target.service.createAndRun(taskType, fenceOf(), body, callerGone(req));
      else return false;
    } else {
      const query = plainQuery(search);
      if (!query || query.action !== 'running') return false;
      call = (body) => {
        const q = validateDto(WriteQueryDto, query);
        checkTypeParam(taskType, q.task_type);
        const fence = fenceOf();
        return target.service.act(taskType, 'running', q.task_id, fence, body, callerGone(req));
      };
    }
    this.count++;
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('error', () => res.destroy());
    req.on('end', () => {
      const raw = chunks.length === 1 ? chunks[0] : Buffer.concat(chunks);
      this.answer(target, req, res, raw, call).catch(() => res.destroy());
    });
    return true;
  }

  private async answer(
    target: Target,
    req: IncomingMessage,
    res: ServerResponse,
    raw: Buffer,
    call: (body: unknown) => Promise<unknown>,
  ): Promise<void> {
    let status = 200;
    let payload: unknown;
    let span: OpenSpan | undefined;
    let failure: unknown;
    try {
      // The order of the app: parse the body, check the caller, then the handler's own checks.
      const body = this.parse(target.parseJson, req, raw);
      if (tracing().enabled) span = this.span(req, body);
      target.verifier.verify({
        method: req.method ?? '',
        pathWithQuery: req.url ?? '',
        headers: req.headers,
        rawBody: raw,
      });
      payload = ok(await call(body));
    } catch (err) {
      const failed = errorEnvelope(err, this.logger);
      status = failed.status;
      payload = failed.body;
      failure = err;
    }
    if (span) endWorkerSpan(span, status, failure);
    if (res.destroyed) return;
    let text: string;
    try {
      text = JSON.stringify(payload);
    } catch (err) {
      // A result that cannot be written as JSON (a cycle, a BigInt): the 500 the app would answer.
      const failed = errorEnvelope(err, this.logger);
      status = failed.status;
      text = JSON.stringify(failed.body);
    }
    res.writeHead(status, {
      'content-type': 'application/json; charset=utf-8',
      'content-length': Buffer.byteLength(text),
    });
    res.end(text);
  }

  /** The server span of a call answered here (WorkerTracingInterceptor's, for the app's calls). */
  private span(req: IncomingMessage, body: unknown): OpenSpan | undefined {
    const url = req.url ?? '';
    const q = url.indexOf('?');
    const query = Object.fromEntries(new URLSearchParams(q < 0 ? '' : url.slice(q + 1)));
    const taskType = url.slice(PATH_PREFIX.length, q < 0 ? undefined : q);
    return startWorkerSpan(req.method ?? '', taskType, query, body, req.headers);
  }

  /** The parsed body, or the HttpException Nest makes of the parser's error. */
  private parse(parseJson: JsonParser, req: IncomingMessage, raw: Buffer): unknown {
    let result: unknown;
    let failure: (Error & { statusCode?: number }) | null = null;
    parseJson(req, raw, (err, value) => {
      failure = err;
      result = value;
    });
    if (failure) {
      const err = failure as Error & { statusCode?: number };
      throw new HttpException(err.message, err.statusCode ?? 400);
    }
    return result;
  }
}
