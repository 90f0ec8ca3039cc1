import { join } from 'node:path';
import type { ConsoleOidcConfig } from './oidc-sessions';

/** The console's settings, read once at boot. */
export interface ConsoleConfig {
  host: string;
  port: number;
  /** Where the console's server reaches the scheduler's public API (`/api/*` is passed there). */
  schedulerUrl: string;
  /** The built single-page app (`npm run build:console` writes it). */
  uiDir: string;
  /** Longest wait for the scheduler's answer to one proxied request. */
  apiTimeoutMs: number;
  /** Single sign-on at the company's identity provider; absent: API keys only. */
  oidc?: ConsoleOidcConfig;
}

export const CONSOLE_CONFIG = Symbol('CONSOLE_CONFIG');

function httpUrl(name: string, raw: string): string {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new Error(`${name} must be an http(s) URL, got ${JSON.stringify(raw)}`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new Error(`${name} must be an http(s) URL, got ${JSON.stringify(raw)}`);
  }
  if (url.username || url.password || url.search || url.hash) {
    throw new Error(`${name} must be a plain base URL (no credentials, query or fragment)`);
  }
  return url.href.replace(/\/+$/, '');
}

export function loadConsoleConfig(env: NodeJS.ProcessEnv = process.env): ConsoleConfig {
  const raw = env.CONSOLE_PORT ?? '3001';
  const port = Number(raw);
  if (!Number.isInteger(port) || port < 0 || port > 65535) {
    throw new Error(`CONSOLE_PORT must be a port number, got ${JSON.stringify(raw)}`);
  }
  const rawTimeout = env.CONSOLE_API_TIMEOUT_MS ?? '30000';
  const apiTimeoutMs = Number(rawTimeout);
  if (!Number.isInteger(apiTimeoutMs) || apiTimeoutMs < 100) {
    throw new Error(
      `CONSOLE_API_TIMEOUT_MS must be a whole number of milliseconds (100 or more), got ${JSON.stringify(rawTimeout)}`,
    );
  }
  return {
    host: env.CONSOLE_HOST ?? '127.0.0.1',
    port,
    schedulerUrl: httpUrl(
      'BATON_SCHEDULER_URL',
      env.BATON_SCHEDULER_URL ?? env.BATON_SCHEDULER_PUBLIC_URL ?? 'http://127.0.0.1:3000',
    ),
    // dist/apps/console/src -> dist/console-ui
    uiDir: env.CONSOLE_UI_DIR ?? join(__dirname, '..', '..', '..', 'console-ui'),
    apiTimeoutMs,
    oidc: oidcConfig(env),
  };
}

/** `CONSOLE_OIDC_*`: unset issuer, people paste an API key. */
function oidcConfig(env: NodeJS.ProcessEnv): ConsoleOidcConfig | undefined {
  const issuer = env.CONSOLE_OIDC_ISSUER?.trim();
  if (!issuer) return undefined;
  const at = new URL(httpUrl('CONSOLE_OIDC_ISSUER', issuer));
  // The ID token is taken on the strength of TLS to the provider: no plain http but on loopback.
  if (at.protocol !== 'https:' && !['localhost', '127.0.0.1', '[::1]'].includes(at.hostname))
    throw new Error('CONSOLE_OIDC_ISSUER must be https (http only on loopback, for tests)');
  const clientId = env.CONSOLE_OIDC_CLIENT_ID?.trim();
  if (!clientId) throw new Error('CONSOLE_OIDC_CLIENT_ID is required with CONSOLE_OIDC_ISSUER');
  if (!env.CONSOLE_PUBLIC_URL)
    throw new Error(
      'CONSOLE_PUBLIC_URL is required with CONSOLE_OIDC_ISSUER: the address people reach the console at (the provider sends them back to <it>/auth/callback)',
    );
  const hours = Number(env.CONSOLE_SESSION_HOURS ?? 12);
  if (!Number.isFinite(hours) || hours <= 0 || hours > 24 * 30)
    throw new Error('CONSOLE_SESSION_HOURS must be a number of hours from 0 to 720');
  return {
    issuer,
    clientId,
    clientSecret: env.CONSOLE_OIDC_CLIENT_SECRET || undefined,
    publicUrl: httpUrl('CONSOLE_PUBLIC_URL', env.CONSOLE_PUBLIC_URL),
    scopes: env.CONSOLE_OIDC_SCOPES?.trim() || 'openid email groups',
    resource: env.CONSOLE_OIDC_RESOURCE?.trim() || undefined,
    sessionMs: Math.round(hours * 3_600_000),
  };
}
