import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { request } from 'undici';
import { CONSOLE_HEADER, OidcSessions } from './oidc-sessions';

/** Request headers passed on to the scheduler; everything else stays at the console. */
const FORWARDED = [
  'authorization',
  'content-type',
  'accept',
  'idempotency-key',
  'last-event-id',
] as const;
/** Answer headers passed back to the browser. */
const RETURNED = ['content-type', 'retry-after'] as const;
/** The scheduler's live stream of task changes: passed on as it comes, for as long as it lasts. */
const LIVE_STREAM = /^\/v1\/task-changes\/stream(\?|$)/;
/** The largest body the console passes on (the scheduler's own default limit). */
const BODY_LIMIT = 1024 * 1024;

const envelope = (code: number, message: string): string =>
  JSON.stringify({ code, message, data: null });

/**
 * The scheduler path of a console address, or why there is none. Only `/api/v1/...` goes on, as
 * `/v1/...` with its bytes unchanged, and only when no URL parser on the way could read it as
 * another path: a segment that is `.` or `..` once percent-decoded (`%2e%2e`), a backslash (read
 * as `/` in http URLs), an encoded `/` or `\`, a `#`, or a control character is refused, so
 * `/api/v1/../../metrics` cannot reach the scheduler's `/metrics`.
 */
export function schedulerPath(
  url: string,
): { path: string } | { refused: 'not-api' | 'ambiguous' } {
  const q = url.indexOf('?');
  const rawPath = q < 0 ? url : url.slice(0, q);
  const query = q < 0 ? '' : url.slice(q);
  // eslint-disable-next-line no-control-regex
  if (url.includes('#') || /[\\\u0000-\u001f\u007f]/.test(rawPath)) return { refused: 'ambiguous' };
  for (const segment of rawPath.split('/')) {
    let decoded: string;
    try {
      decoded = decodeURIComponent(segment);
    } catch {
      return { refused: 'ambiguous' };
    }
    if (decoded === '.' || decoded === '..' || /[/\\]/.test(decoded)) {
      return { refused: 'ambiguous' };
    }
  }
  if (!rawPath.startsWith('/api/v1/')) return { refused: 'not-api' };
  return { path: `${rawPath.slice('/api'.length)}${query}` };
}

/**
 * `/api/v1/*` is passed to the scheduler's public API as `/v1/*`, with the caller's own API key
 * (`Authorization`), or the access token of the person signed in through the console (its
 * session cookie): the console has no credentials of its own, so a page shows only what its user
 * may read, and does only what they may do.
 */
export function registerApiProxy(
  app: FastifyInstance,
  schedulerUrl: string,
  timeoutMs: number,
  sessions?: OidcSessions,
): void {
  void app.register(async (scope) => {
    // The body travels as bytes: the scheduler parses and checks it.
    scope.removeAllContentTypeParsers();
    scope.addContentTypeParser(
      '*',
      { parseAs: 'buffer', bodyLimit: BODY_LIMIT },
      (_r, body, done) => done(null, body),
    );
    scope.all('/api/*', (req, reply) => forward(req, reply, schedulerUrl, timeoutMs, sessions));
  });
}

async function forward(
  req: FastifyRequest,
  reply: FastifyReply,
  schedulerUrl: string,
  timeoutMs: number,
  sessions?: OidcSessions,
): Promise<FastifyReply> {
  const target = schedulerPath(req.url);
  if ('refused' in target) {
    return target.refused === 'not-api'
      ? reply
          .code(404)
          .type('application/json')
          .send(envelope(40402, `${req.method} ${req.url}: the console passes on /api/v1/* only`))
      : reply
          .code(400)
          .type('application/json')
          .send(
            envelope(
              40003,
              'the path has a dot segment, a backslash, an encoded slash or a control character: the console passes on plain /api/v1/* paths only',
            ),
          );
  }
  const { path } = target;
  const headers: Record<string, string> = {};
  for (const name of FORWARDED) {
    const value = req.headers[name];
    if (typeof value === 'string') headers[name] = value;
  }
  // A person signed in through the console: the call goes with their access token. A change
  // made with the session's cookie must come from the console's own pages (CONSOLE_HEADER).
  if (sessions && headers.authorization === undefined && sessions.hasSession(req)) {
    if (!['GET', 'HEAD'].includes(req.method) && req.headers[CONSOLE_HEADER] !== '1')
      return reply
        .code(403)
        .type('application/json')
        .send(
          envelope(
            40300,
            'a change made with the sign-in cookie must come from the console’s pages',
          ),
        );
    const token = await sessions.bearerFor(req);
    if (token) headers.authorization = `Bearer ${token}`;
  }
  const body = Buffer.isBuffer(req.body) && req.body.length > 0 ? req.body : undefined;
  const live = LIVE_STREAM.test(path);
  // A live stream ends when the page leaves: so does the request to the scheduler.
  const gone = new AbortController();
  if (live) req.raw.once('close', () => gone.abort());
  try {
    const res = await request(`${schedulerUrl}${path}`, {
      method: req.method as 'GET',
      headers,
      body,
      headersTimeout: timeoutMs,
      // A live stream is quiet between changes (a comment every 15 s): no limit on its body.
      bodyTimeout: live ? 0 : timeoutMs,
      signal: gone.signal,
    });
    reply.code(res.statusCode);
    for (const name of RETURNED) {
      const value = res.headers[name];
      if (typeof value === 'string') reply.header(name, value);
    }
    // What a person's key may read is not for shared caches.
    reply.header('cache-control', 'no-store');
    if (live && String(res.headers['content-type']).startsWith('text/event-stream')) {
      // Passed on as it comes, not gathered first.
      reply.header('x-accel-buffering', 'no');
      res.body.on('error', () => undefined);
      return reply.send(res.body);
    }
    return reply.send(Buffer.from(await res.body.arrayBuffer()));
  } catch (err) {
    req.log.warn({ err }, 'the scheduler did not answer a proxied request');
    return reply
      .code(502)
      .type('application/json')
      .send(
        envelope(
          50200,
          `the scheduler at ${schedulerUrl} did not answer: ${(err as Error).message}`,
        ),
      );
  }
}
