import { createHash, createHmac, timingSafeEqual } from 'node:crypto';
import { Clock, systemClock } from '@baton/time';
import { ContractErrorCode, ContractException } from '../../errors/contract.exception';
import { HEADER } from '../../util/headers';
import { randomHex } from '../../util/random-pool';

/**
 * How calls between scheduler and worker are authenticated. Either a shared bearer token, or an
 * HMAC-SHA256 signature over method, path (with query), timestamp, nonce and body hash.
 * `none` must be chosen explicitly, so a worker is never open by omission.
 */
export type AuthConfig =
  | { mode: 'none' }
  | { mode: 'token'; token: string }
  | { mode: 'hmac'; secret: string; replayWindowMs?: number };

export const DEFAULT_REPLAY_WINDOW_MS = 300_000;

/** The parts of a request a signature covers. */
export interface SignedParts {
  method: string;
  /** The request target exactly as sent: path and query string, not decoded. */
  pathWithQuery: string;
  /** The X-Baton-Fence header as sent; empty when there is none. */
  fence?: string;
  body: string | Buffer;
}

/**
 * The canonical string an HMAC signature covers. The nonce makes two identical calls sent in the
 * same millisecond sign differently, so replay refusal never refuses a genuine second call; the
 * fence is covered so that nobody on the path can raise it and lock the real scheduler out.
 */
export function canonicalRequest(parts: SignedParts, timestamp: string, nonce: string): string {
  const bodyHash = createHash('sha256').update(parts.body).digest('hex');
  return [
    parts.method.toUpperCase(),
    parts.pathWithQuery,
    timestamp,
    nonce,
    parts.fence ?? '',
    bodyHash,
  ].join('\n');
}

/** `v1=<lower-case hex hmac>` for the request. */
export function signRequest(
  secret: string,
  parts: SignedParts,
  timestamp: string,
  nonce: string,
): string {
  const mac = createHmac('sha256', secret)
    .update(canonicalRequest(parts, timestamp, nonce))
    .digest('hex');
  return `v1=${mac}`;
}

/**
 * The headers a caller adds for `auth` (none, token, or timestamp + nonce + signature). `now`
 * is the signature's timestamp (epoch ms): the caller's clock; default: systemClock's.
 */
export function authHeaders(
  auth: AuthConfig,
  parts: SignedParts,
  now: number = systemClock.now(),
): Record<string, string> {
  switch (auth.mode) {
    case 'none':
      return {};
    case 'token':
      return { [HEADER.AUTHORIZATION]: `Bearer ${auth.token}` };
    case 'hmac': {
      const timestamp = String(now);
      const nonce = randomHex(12);
      return {
        [HEADER.TIMESTAMP]: timestamp,
        [HEADER.NONCE]: nonce,
        [HEADER.SIGNATURE]: signRequest(auth.secret, parts, timestamp, nonce),
      };
    }
  }
}

function safeEqual(a: string, b: string): boolean {
  const ab = Buffer.from(a);
  const bb = Buffer.from(b);
  return ab.length === bb.length && timingSafeEqual(ab, bb);
}

export interface AuthRequest {
  method: string;
  pathWithQuery: string;
  headers: Record<string, string | string[] | undefined>;
  rawBody: Buffer | string;
}

function header(req: AuthRequest, name: string): string | undefined {
  const v = req.headers[name];
  return Array.isArray(v) ? v[0] : v;
}

/**
 * Checks a request against the configured auth, refusing with UNAUTHENTICATED, BAD_SIGNATURE,
 * SIGNATURE_EXPIRED or SIGNATURE_REPLAYED (all 401). A signature is accepted once: the verifier
 * remembers every signature inside the replay window.
 */
export class RequestVerifier {
  private readonly seen = new Map<string, number>();
  private lastSweep = 0;

  constructor(
    private readonly auth: AuthConfig,
    /** Judges the replay window and how long a signature is remembered. */
    private readonly clock: Clock = systemClock,
  ) {}

  verify(req: AuthRequest): void {
    switch (this.auth.mode) {
      case 'none':
        return;
      case 'token': {
        const given = header(req, HEADER.AUTHORIZATION);
        if (!given || !safeEqual(given, `Bearer ${this.auth.token}`)) {
          throw new ContractException(
            ContractErrorCode.UNAUTHENTICATED,
            'missing or wrong bearer token',
          );
        }
        return;
      }
      case 'hmac':
        return this.verifyHmac(
          req,
          this.auth.secret,
          this.auth.replayWindowMs ?? DEFAULT_REPLAY_WINDOW_MS,
        );
    }
  }

  private verifyHmac(req: AuthRequest, secret: string, windowMs: number): void {
    const timestamp = header(req, HEADER.TIMESTAMP);
    const nonce = header(req, HEADER.NONCE);
    const signature = header(req, HEADER.SIGNATURE);
    if (!timestamp || !nonce || !signature) {
      throw new ContractException(
        ContractErrorCode.UNAUTHENTICATED,
        `missing ${HEADER.TIMESTAMP}, ${HEADER.NONCE} or ${HEADER.SIGNATURE} header`,
      );
    }
    if (!/^[A-Za-z0-9_-]{16,64}$/.test(nonce)) {
      throw new ContractException(
        ContractErrorCode.UNAUTHENTICATED,
        `${HEADER.NONCE} must be 16-64 characters of [A-Za-z0-9_-]`,
      );
    }
    const now = this.clock.now();
    const ts = Number(timestamp);
    if (!/^\d{1,15}$/.test(timestamp) || Math.abs(now - ts) > windowMs) {
      throw new ContractException(
        ContractErrorCode.SIGNATURE_EXPIRED,
        'signature timestamp outside the replay window',
        {
          window_ms: windowMs,
        },
      );
    }
    const expected = signRequest(
      secret,
      {
        method: req.method,
        pathWithQuery: req.pathWithQuery,
        fence: header(req, HEADER.FENCE),
        body: req.rawBody,
      },
      timestamp,
      nonce,
    );
    if (!safeEqual(signature, expected)) {
      throw new ContractException(
        ContractErrorCode.BAD_SIGNATURE,
        'signature does not match the request',
      );
    }
    this.sweep(now, windowMs);
    if (this.seen.has(signature)) {
      throw new ContractException(ContractErrorCode.SIGNATURE_REPLAYED, 'signature already used');
    }
    this.seen.set(signature, now);
  }

  /**
   * Forgets signatures that would be refused as expired anyway. Each is kept by the time it was
   * accepted (its timestamp was within the window of that moment), so after two windows it is
   * surely stale; the map is in acceptance order, so the sweep stops at the first young one.
   */
  private sweep(now: number, windowMs: number): void {
    if (now - this.lastSweep < 1000) return;
    this.lastSweep = now;
    for (const [sig, acceptedAt] of this.seen) {
      if (now - acceptedAt <= 2 * windowMs) break;
      this.seen.delete(sig);
    }
  }
}
