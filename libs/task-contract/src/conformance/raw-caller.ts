import { randomUUID } from 'node:crypto';
import { request } from 'undici';
import { Clock } from '@baton/time';
import { AuthConfig, SignedParts, authHeaders } from '../worker/auth/request-auth';
import { HEADER, newTraceparent } from '../util/headers';

/** How a probe authenticates: correctly, not at all, or with wrong credentials. */
export type AuthUse = 'good' | 'none' | 'wrong';

export interface RawCall {
  method: 'GET' | 'POST' | 'PUT';
  path: string;
  query?: Record<string, string>;
  /** A value to JSON-encode, or a string sent as is (to send broken JSON). */
  body?: unknown;
  rawBody?: string;
  contentType?: string;
  fence?: number | null;
  auth?: AuthUse;
  /** Exact headers to send instead of computing them (to replay a signed request). */
  headers?: Record<string, string>;
}

export interface RawAnswer {
  status: number;
  json: unknown;
  text: string;
  /** The headers that were sent, so a probe can replay them. */
  sent: Record<string, string>;
}

/**
 * Sends exactly the request a probe wants — including wrong ones the WorkerClient would never
 * build — and returns the raw answer. Used only by the conformance kit.
 */
export class RawCaller {
  constructor(
    private readonly baseUrl: string,
    private readonly auth: AuthConfig,
    private readonly timeoutMs: number,
    /** Signature timestamps. */
    private readonly clock: Clock,
  ) {}

  async send(call: RawCall): Promise<RawAnswer> {
    const base = new URL(this.baseUrl);
    const qs = new URLSearchParams(call.query ?? {}).toString();
    const pathWithQuery = `${base.pathname.replace(/\/+$/, '')}${call.path}${qs ? `?${qs}` : ''}`;
    const payload = call.rawBody ?? (call.body === undefined ? '' : JSON.stringify(call.body));
    let headers: Record<string, string>;
    if (call.headers) {
      headers = call.headers;
    } else {
      headers = {
        [HEADER.REQUEST_ID]: randomUUID(),
        [HEADER.TRACEPARENT]: newTraceparent(),
      };
      if (payload !== '') headers['content-type'] = call.contentType ?? 'application/json';
      if (call.fence !== undefined && call.fence !== null)
        headers[HEADER.FENCE] = String(call.fence);
      const use = call.auth ?? 'good';
      if (use === 'good')
        Object.assign(
          headers,
          authHeaders(
            this.auth,
            { method: call.method, pathWithQuery, fence: headers[HEADER.FENCE], body: payload },
            this.clock.now(),
          ),
        );
      if (use === 'wrong')
        Object.assign(
          headers,
          wrongAuthHeaders(
            this.auth,
            { method: call.method, pathWithQuery, fence: headers[HEADER.FENCE], body: payload },
            this.clock.now(),
          ),
        );
    }
    const res = await request(`${base.origin}${pathWithQuery}`, {
      method: call.method,
      headers,
      body: payload === '' ? undefined : payload,
      headersTimeout: this.timeoutMs,
      bodyTimeout: this.timeoutMs,
    });
    const text = await res.body.text();
    let json: unknown;
    try {
      json = JSON.parse(text);
    } catch {
      json = undefined;
    }
    return { status: res.statusCode, json, text, sent: headers };
  }
}

/** Credentials of the right shape but the wrong value. */
function wrongAuthHeaders(
  auth: AuthConfig,
  parts: SignedParts,
  now: number,
): Record<string, string> {
  switch (auth.mode) {
    case 'token':
      return authHeaders({ mode: 'token', token: `${auth.token}-wrong` }, parts, now);
    case 'hmac':
      return authHeaders({ mode: 'hmac', secret: `${auth.secret}-wrong` }, parts, now);
    case 'none':
      return { [HEADER.AUTHORIZATION]: 'Bearer wrong-token-for-conformance' };
  }
}
