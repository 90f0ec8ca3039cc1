import { createHash, randomBytes } from 'node:crypto';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { request } from 'undici';
import { systemClock } from '@baton/time';

/** How the console signs people in at the company's identity provider (docs/console.md). */
export interface ConsoleOidcConfig {
  issuer: string;
  clientId: string;
  /** Absent: a public client (PKCE alone). */
  clientSecret?: string;
  /** The console's own address as people reach it: where the provider sends them back. */
  publicUrl: string;
  scopes: string;
  /** The API as a resource (RFC 8707), for providers that want one to issue a JWT for it. */
  resource?: string;
  /** A session ends this long after sign-in, whatever its tokens say. */
  sessionMs: number;
}

/** The cookie that names a session (HttpOnly: scripts never see it). */
export const SESSION_COOKIE = 'baton_session';
/**
 * The cookie that ties a sign-in to the browser that started it: the way back is taken only in
 * that browser, so nobody can have another person's browser finish a sign-in as themselves.
 */
const SIGN_IN_COOKIE = 'baton_sign_in';
/**
 * What the console's pages send with every call: a request another site makes a browser send
 * cannot carry it without the console's leave (CORS), so a change asked with the session's
 * cookie and without it is refused (no cross-site request forgery).
 */
export const CONSOLE_HEADER = 'x-baton-console';

/** A sign-in under way: kept from the redirect to the provider until it comes back (10 min). */
interface Pending {
  verifier: string;
  nonce: string;
  back: string;
  at: number;
}

interface Session {
  user: string;
  accessToken: string;
  refreshToken?: string;
  /** When the access token expires (ms). */
  expiresAt: number;
  /** When the session ends, whatever (ms). */
  endsAt: number;
  /** A refresh under way: the calls that need one meanwhile share it. */
  refreshing?: Promise<string | undefined>;
}

interface Discovery {
  authorization_endpoint: string;
  token_endpoint: string;
  end_session_endpoint?: string;
}

const PENDING_MS = 10 * 60_000;
const MAX_PENDING = 10_000;
const MAX_SESSIONS = 50_000;
/** An access token this close to its expiry is refreshed first. */
const REFRESH_BEFORE_MS = 30_000;
const CALL_MS = 10_000;

const b64url = (bytes = 32): string => randomBytes(bytes).toString('base64url');

/** A token lifetime the provider gave, in seconds (5 min when it gave none that reads). */
const seconds = (v: unknown): number => (Number(v) > 0 && Number(v) < 1e7 ? Number(v) : 300);

/** The provider refused the grant (a code or refresh token spent, revoked or wrong). */
class TokenRefused extends Error {}

/** The cookies of a request, by name. */
function cookies(req: FastifyRequest): Map<string, string> {
  const out = new Map<string, string>();
  for (const part of (req.headers.cookie ?? '').split(';')) {
    const at = part.indexOf('=');
    if (at > 0) out.set(part.slice(0, at).trim(), part.slice(at + 1).trim());
  }
  return out;
}

/** A page of the console to come back to: its own paths only (no open redirect). */
function safeBack(raw: unknown): string {
  return typeof raw === 'string' && /^\/(?![/\\])[\x21-\x7e]{0,1000}$/.test(raw) ? raw : '/';
}

/** The claims of a JWT the provider handed over directly (OIDC Core 3.1.3.7: TLS vouches for it). */
function claimsOf(jwt: string | undefined): Record<string, unknown> {
  const body = jwt?.split('.')[1];
  if (!body) return {};
  try {
    return JSON.parse(Buffer.from(body, 'base64url').toString('utf8')) as Record<string, unknown>;
  } catch {
    return {};
  }
}

/**
 * Single sign-on for the console: OpenID Connect's authorization code flow with PKCE, sessions
 * kept on the server (the browser holds only an HttpOnly cookie naming one), and each call to the
 * API made with the person's access token, refreshed as it nears its end. The scheduler checks
 * the token itself (its issuer, audience, signature) and gives the person their role.
 */
export class OidcSessions {
  private discovery: Promise<Discovery> | undefined;
  private readonly pending = new Map<string, Pending>();
  private readonly sessions = new Map<string, Session>();
  private readonly secure: boolean;

  constructor(
    private readonly config: ConsoleOidcConfig,
    private readonly now: () => number = () => systemClock.now(),
  ) {
    this.secure = config.publicUrl.startsWith('https:');
  }

  /** `/auth/*`: the sign-in, its return, who is signed in, and the sign-out. */
  register(app: FastifyInstance): void {
    app.get('/auth/login', (req, reply) => this.login(req, reply));
    app.get('/auth/callback', (req, reply) => this.callback(req, reply));
    app.get('/auth/me', (req, reply) => {
      const s = this.sessionOf(req);
      return s
        ? reply.send({ user: s.user, ends_at: new Date(s.endsAt).toISOString() })
        : reply.code(401).send({ code: 40100, message: 'not signed in', data: null });
    });
    app.post('/auth/logout', (req, reply) => this.logout(req, reply));
  }

  /**
   * The access token of the request's session (refreshed when it nears its end), or undefined:
   * no session, or one that ended (it is forgotten then).
   */
  async bearerFor(req: FastifyRequest): Promise<string | undefined> {
    const id = cookies(req).get(SESSION_COOKIE);
    const s = this.sessionOf(req, id);
    if (!id || !s) return undefined;
    if (s.expiresAt - this.now() > REFRESH_BEFORE_MS) return s.accessToken;
    if (!s.refreshToken) {
      if (s.expiresAt > this.now()) return s.accessToken;
      this.sessions.delete(id);
      return undefined;
    }
    // One refresh at a time: a refresh token the provider rotates is good once.
    s.refreshing ??= this.refresh(id, s).finally(() => (s.refreshing = undefined));
    return s.refreshing;
  }

  private async refresh(id: string, s: Session): Promise<string | undefined> {
    try {
      const tokens = await this.token({
        grant_type: 'refresh_token',
        refresh_token: s.refreshToken as string,
        ...(this.config.resource ? { resource: this.config.resource } : {}),
      });
      s.accessToken = tokens.access_token as string;
      s.refreshToken = (tokens.refresh_token as string | undefined) ?? s.refreshToken;
      s.expiresAt = this.now() + 1000 * seconds(tokens.expires_in);
      return s.accessToken;
    } catch (err) {
      // The provider said no (revoked, expired, reused): the session is over. A provider that
      // could not be reached leaves it, and the call goes with the token it has.
      if (err instanceof TokenRefused) {
        this.sessions.delete(id);
        return undefined;
      }
      return s.expiresAt > this.now() ? s.accessToken : undefined;
    }
  }

  /** Whether the request came with a session cookie (its changes then need CONSOLE_HEADER). */
  hasSession(req: FastifyRequest): boolean {
    return cookies(req).has(SESSION_COOKIE);
  }

  /** The session the request's cookie names, while it lasts. */
  private sessionOf(
    req: FastifyRequest,
    id = cookies(req).get(SESSION_COOKIE),
  ): Session | undefined {
    const s = id ? this.sessions.get(id) : undefined;
    if (!id || !s) return undefined;
    if (s.endsAt <= this.now()) {
      this.sessions.delete(id);
      return undefined;
    }
    return s;
  }

  private endpoints(): Promise<Discovery> {
    this.discovery ??= (async () => {
      const res = await request(
        `${this.config.issuer.replace(/\/$/, '')}/.well-known/openid-configuration`,
        {
          headersTimeout: CALL_MS,
          bodyTimeout: CALL_MS,
        },
      );
      const doc = (await res.body.json()) as Record<string, unknown>;
      if (res.statusCode !== 200 || doc.issuer !== this.config.issuer)
        throw new Error(
          `the identity provider's discovery document is not ${this.config.issuer}'s`,
        );
      return doc as unknown as Discovery;
    })().catch((err: unknown) => {
      this.discovery = undefined;
      throw err;
    });
    return this.discovery;
  }

  private async login(req: FastifyRequest, reply: FastifyReply): Promise<FastifyReply> {
    const { authorization_endpoint } = await this.endpoints();
    const state = b64url();
    const verifier = b64url();
    const nonce = b64url(16);
    if (this.pending.size >= MAX_PENDING) this.sweep();
    // Still full of sign-ins under way (a flood of them): the oldest go first.
    for (const oldest of this.pending.keys()) {
      if (this.pending.size < MAX_PENDING) break;
      this.pending.delete(oldest);
    }
    this.pending.set(state, {
      verifier,
      nonce,
      back: safeBack((req.query as Record<string, unknown>).return),
      at: this.now(),
    });
    const url = new URL(authorization_endpoint);
    url.search = new URLSearchParams({
      client_id: this.config.clientId,
      response_type: 'code',
      redirect_uri: this.redirectUri(),
      scope: this.config.scopes,
      state,
      nonce,
      code_challenge: createHash('sha256').update(verifier).digest('base64url'),
      code_challenge_method: 'S256',
      ...(this.config.resource ? { resource: this.config.resource } : {}),
    }).toString();
    return reply
      .header('set-cookie', this.cookie(SIGN_IN_COOKIE, state, PENDING_MS / 1000))
      .redirect(url.toString(), 302);
  }

  private async callback(req: FastifyRequest, reply: FastifyReply): Promise<FastifyReply> {
    const q = req.query as Record<string, string | undefined>;
    const started = cookies(req).get(SIGN_IN_COOKIE);
    const pending = q.state && q.state === started ? this.pending.get(q.state) : undefined;
    if (q.state && q.state === started) this.pending.delete(q.state);
    if (!pending || this.now() - pending.at > PENDING_MS)
      return this.page(
        reply,
        400,
        'This sign-in is not one the console started, or it took too long. Sign in again.',
      );
    if (q.error || !q.code)
      return this.page(
        reply,
        401,
        `The identity provider did not sign you in: ${q.error_description ?? q.error ?? 'no code'}.`,
      );
    let tokens: Record<string, unknown>;
    try {
      tokens = await this.token({
        grant_type: 'authorization_code',
        code: q.code,
        redirect_uri: this.redirectUri(),
        code_verifier: pending.verifier,
        ...(this.config.resource ? { resource: this.config.resource } : {}),
      });
    } catch (err) {
      return this.page(
        reply,
        502,
        `The identity provider did not give a token: ${(err as Error).message}`,
      );
    }
    const id = claimsOf(tokens.id_token as string | undefined);
    const aud = Array.isArray(id.aud) ? id.aud : [id.aud];
    if (
      id.iss !== this.config.issuer ||
      !aud.includes(this.config.clientId) ||
      id.nonce !== pending.nonce ||
      typeof id.exp !== 'number' ||
      id.exp * 1000 <= this.now() - 60_000
    )
      return this.page(
        reply,
        401,
        'The identity provider answered with an ID token that is not for this sign-in.',
      );
    const user =
      (typeof id.email === 'string' && id.email_verified !== false && id.email) ||
      (typeof id.sub === 'string' ? id.sub : '');
    if (!user) return this.page(reply, 401, 'The identity provider named no one (no sub).');
    // The session this browser had is over: a new sign-in replaces it.
    const previous = cookies(req).get(SESSION_COOKIE);
    if (previous) this.sessions.delete(previous);
    if (this.sessions.size >= MAX_SESSIONS) this.sweep();
    for (const oldest of this.sessions.keys()) {
      if (this.sessions.size < MAX_SESSIONS) break;
      this.sessions.delete(oldest);
    }
    const sid = b64url();
    this.sessions.set(sid, {
      user,
      accessToken: tokens.access_token as string,
      refreshToken: tokens.refresh_token as string | undefined,
      expiresAt: this.now() + 1000 * seconds(tokens.expires_in),
      endsAt: this.now() + this.config.sessionMs,
    });
    return reply
      .header('set-cookie', [
        this.cookie(SESSION_COOKIE, sid, this.config.sessionMs / 1000),
        this.cookie(SIGN_IN_COOKIE, '', 0),
      ])
      .redirect(pending.back, 302);
  }

  private async logout(req: FastifyRequest, reply: FastifyReply): Promise<FastifyReply> {
    if (req.headers[CONSOLE_HEADER] !== '1')
      return reply
        .code(403)
        .send({ code: 40300, message: 'sign out from the console’s pages', data: null });
    const id = cookies(req).get(SESSION_COOKIE);
    const s = id ? this.sessions.get(id) : undefined;
    if (id) this.sessions.delete(id);
    let redirect = '/';
    const end = s
      ? (await this.endpoints().catch(() => undefined))?.end_session_endpoint
      : undefined;
    if (end && s) {
      const url = new URL(end);
      url.search = new URLSearchParams({
        client_id: this.config.clientId,
        // By the client, not the ID token: the page that follows the answer never sees a token.
        post_logout_redirect_uri: `${this.config.publicUrl}/`,
      }).toString();
      redirect = url.toString();
    }
    return reply.header('set-cookie', this.cookie(SESSION_COOKIE, '', 0)).send({ redirect });
  }

  private async token(form: Record<string, string>): Promise<Record<string, unknown>> {
    const { token_endpoint } = await this.endpoints();
    const headers: Record<string, string> = {
      'content-type': 'application/x-www-form-urlencoded',
      accept: 'application/json',
    };
    const body = new URLSearchParams(form);
    if (this.config.clientSecret) {
      const pair = `${encodeURIComponent(this.config.clientId)}:${encodeURIComponent(this.config.clientSecret)}`;
      headers.authorization = `Basic ${Buffer.from(pair).toString('base64')}`;
    } else body.set('client_id', this.config.clientId);
    const res = await request(token_endpoint, {
      method: 'POST',
      headers,
      body: body.toString(),
      headersTimeout: CALL_MS,
      bodyTimeout: CALL_MS,
    });
    const json = (await res.body.json().catch(() => ({}))) as Record<string, unknown>;
    if (res.statusCode === 400 || res.statusCode === 401)
      throw new TokenRefused(String(json.error_description ?? json.error ?? res.statusCode));
    if (res.statusCode !== 200 || typeof json.access_token !== 'string')
      throw new Error(String(json.error_description ?? json.error ?? `answered ${res.statusCode}`));
    return json;
  }

  private redirectUri(): string {
    return `${this.config.publicUrl}/auth/callback`;
  }

  private cookie(name: string, value: string, maxAgeSec: number): string {
    return `${name}=${value}; Path=/; HttpOnly; SameSite=Lax; Max-Age=${Math.floor(maxAgeSec)}${this.secure ? '; Secure' : ''}`;
  }

  /** Forgets sign-ins that never came back and sessions that ended. */
  private sweep(): void {
    const now = this.now();
    for (const [k, p] of this.pending) if (now - p.at > PENDING_MS) this.pending.delete(k);
    for (const [k, s] of this.sessions) if (s.endsAt <= now) this.sessions.delete(k);
  }

  /** A plain page for what went wrong on the way back, with a way to start again. */
  private page(reply: FastifyReply, status: number, text: string): FastifyReply {
    const escaped = text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
    return reply
      .code(status)
      .type('text/html; charset=utf-8')
      .send(
        `<!doctype html><html lang="en"><title>Sign-in failed</title><main><h1>Sign-in failed</h1><p>${escaped}</p><p><a href="/">Back to the console</a></p></main></html>`,
      );
  }
}
