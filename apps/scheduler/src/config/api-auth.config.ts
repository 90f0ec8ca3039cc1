/** How the public API knows its callers (docs/operations.md). */
export interface ApiAuthConfig {
  /** keys: every public route wants `Authorization: Bearer <API key>`; off: open (experiments). */
  mode: 'keys' | 'off';
  /** An admin key to make sure of at start (for automation); null: none. */
  adminKey: string | null;
  /** When set, `/metrics` answers only `Authorization: Bearer <this>` (scrapers'). */
  metricsToken?: string;
}

const KEY = /^[\x21-\x7e]{24,200}$/;

export function apiAuthConfig(env: NodeJS.ProcessEnv): ApiAuthConfig {
  const mode = env.BATON_API_AUTH ?? 'keys';
  if (mode !== 'keys' && mode !== 'off')
    throw new Error(`BATON_API_AUTH must be keys or off, not ${mode}`);
  const adminKey = env.BATON_ADMIN_KEY || null;
  if (adminKey !== null && !KEY.test(adminKey))
    throw new Error('BATON_ADMIN_KEY must be 24-200 printable characters (no spaces)');
  return { mode, adminKey, metricsToken: metricsToken(env) };
}

/** `BATON_METRICS_TOKEN`: unset or empty, `/metrics` is open (as the probes are). */
function metricsToken(env: NodeJS.ProcessEnv): string | undefined {
  const token = env.BATON_METRICS_TOKEN?.trim();
  if (!token) return undefined;
  if (token.length < 16 || /\s/.test(token))
    throw new Error('BATON_METRICS_TOKEN must be 16 characters or more, without spaces');
  return token;
}
