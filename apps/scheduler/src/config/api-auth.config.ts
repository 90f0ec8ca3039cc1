/** How the public API knows its callers (docs/operations.md). */
export interface ApiAuthConfig {
  /** keys: every public route wants `Authorization: Bearer <API key>`; off: open (experiments). */
  mode: 'keys' | 'off';
  /** An admin key to make sure of at start (for automation); null: none. */
  adminKey: string | null;
  /** When set, `/metrics` answers only `Authorization: Bearer <this>` (scrapers'). */
  metricsToken?: string;
  /** People's tokens from the company's identity provider, beside API keys; absent: keys only. */
  oidc?: OidcConfig;
}

/** What the API takes of an OpenID Connect issuer's access tokens (docs/operations.md, "Single sign-on"). */
export interface OidcConfig {
  /** The issuer (its `iss`); its keys are found through `<issuer>/.well-known/openid-configuration`. */
  issuer: string;
  /** What a token's `aud` must hold: this API's name at the issuer. */
  audience: string;
  algorithms: string[];
  /** The claim that lists a person's groups. */
  groupsClaim: string;
  /** A group's role; a person with several gets the highest. */
  roleGroups: Map<string, 'viewer' | 'operator' | 'admin'>;
  /** A group that holds its people to one tenant. */
  tenantGroups: Map<string, string>;
  /** The claim that names a person in the lifecycle and audit logs (`user:<it>`); `sub` without it. */
  userClaim: string;
  leewaySec: number;
}

const KEY = /^[\x21-\x7e]{24,200}$/;

export function apiAuthConfig(env: NodeJS.ProcessEnv): ApiAuthConfig {
  const mode = env.BATON_API_AUTH ?? 'keys';
  if (mode !== 'keys' && mode !== 'off')
    throw new Error(`BATON_API_AUTH must be keys or off, not ${mode}`);
  const adminKey = env.BATON_ADMIN_KEY || null;
  if (adminKey !== null && !KEY.test(adminKey))
    throw new Error('BATON_ADMIN_KEY must be 24-200 printable characters (no spaces)');
  return { mode, adminKey, metricsToken: metricsToken(env), oidc: oidcConfig(env) };
}

const ALGS = [
  'RS256',
  'RS384',
  'RS512',
  'PS256',
  'PS384',
  'PS512',
  'ES256',
  'ES384',
  'ES512',
  'EdDSA',
];
const ROLE_NAMES = ['viewer', 'operator', 'admin'] as const;

/** `group=value,group=value`, each value checked by `check`. */
function pairs<T>(env: NodeJS.ProcessEnv, name: string, check: (v: string) => T): Map<string, T> {
  const out = new Map<string, T>();
  for (const item of (env[name] ?? '').split(',').map((x) => x.trim())) {
    if (!item) continue;
    const at = item.lastIndexOf('=');
    if (at <= 0) throw new Error(`${name}: "${item}" is not group=value`);
    out.set(item.slice(0, at).trim(), check(item.slice(at + 1).trim()));
  }
  return out;
}

/** `BATON_OIDC_*`: unset issuer, no tokens but API keys. */
function oidcConfig(env: NodeJS.ProcessEnv): OidcConfig | undefined {
  const issuer = env.BATON_OIDC_ISSUER?.trim();
  if (!issuer) return undefined;
  let url: URL;
  try {
    url = new URL(issuer);
  } catch {
    throw new Error(`BATON_OIDC_ISSUER must be a URL, not ${issuer}`);
  }
  const loopback = ['localhost', '127.0.0.1', '[::1]'].includes(url.hostname);
  if (url.protocol !== 'https:' && !(url.protocol === 'http:' && loopback))
    throw new Error('BATON_OIDC_ISSUER must be https (http only on loopback, for tests)');
  const audience = env.BATON_OIDC_AUDIENCE?.trim();
  if (!audience) throw new Error('BATON_OIDC_AUDIENCE is required with BATON_OIDC_ISSUER');
  const algorithms = (env.BATON_OIDC_ALGORITHMS ?? 'RS256,PS256,ES256,EdDSA')
    .split(',')
    .map((a) => a.trim())
    .filter(Boolean);
  for (const a of algorithms)
    if (!ALGS.includes(a))
      throw new Error(`BATON_OIDC_ALGORITHMS: ${a} is not one of ${ALGS.join(', ')}`);
  const roleGroups = pairs(env, 'BATON_OIDC_ROLE_GROUPS', (v) => {
    if (!(ROLE_NAMES as readonly string[]).includes(v))
      throw new Error(`BATON_OIDC_ROLE_GROUPS: ${v} is not viewer, operator or admin`);
    return v as (typeof ROLE_NAMES)[number];
  });
  if (roleGroups.size === 0)
    throw new Error(
      'BATON_OIDC_ROLE_GROUPS is required with BATON_OIDC_ISSUER (e.g. baton-admins=admin,baton-viewers=viewer)',
    );
  const tenantGroups = pairs(env, 'BATON_OIDC_TENANT_GROUPS', (v) => {
    if (!/^[a-z0-9][a-z0-9_-]{0,99}$/.test(v))
      throw new Error(`BATON_OIDC_TENANT_GROUPS: ${v} is not a tenant name`);
    return v;
  });
  const leeway = Number(env.BATON_OIDC_LEEWAY_SECONDS ?? 30);
  if (!Number.isInteger(leeway) || leeway < 0 || leeway > 300)
    throw new Error('BATON_OIDC_LEEWAY_SECONDS must be a whole number from 0 to 300');
  return {
    issuer,
    audience,
    algorithms,
    groupsClaim: env.BATON_OIDC_GROUPS_CLAIM?.trim() || 'groups',
    roleGroups,
    tenantGroups,
    userClaim: env.BATON_OIDC_USER_CLAIM?.trim() || 'email',
    leewaySec: leeway,
  };
}

/** `BATON_METRICS_TOKEN`: unset or empty, `/metrics` is open (as the probes are). */
function metricsToken(env: NodeJS.ProcessEnv): string | undefined {
  const token = env.BATON_METRICS_TOKEN?.trim();
  if (!token) return undefined;
  if (token.length < 16 || /\s/.test(token))
    throw new Error('BATON_METRICS_TOKEN must be 16 characters or more, without spaces');
  return token;
}
