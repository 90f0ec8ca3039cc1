import { Inject, Injectable, Logger } from '@nestjs/common';
import { Clock } from '@baton/time';
import { SCHEDULER_CONFIG, SchedulerConfig } from '../config';
import type { OidcConfig } from '../config';
import { Principal, ROLES, Role } from './access';
import { readIssuerKeys } from './issuer-keys';
import { Jwk, JwtRefused, keyTypeOf, verifyJwt } from './jwt-verifier';

/** How long the issuer's keys are used before they are read again. */
const KEYS_FOR_MS = 10 * 60_000;
/** A token naming a key not known is answered from a fresh read at most this often. */
const REREAD_AFTER_MS = 30_000;
/** How long keys read before are used while the issuer cannot be read. */
const STALE_KEYS_MS = 60 * 60_000;
/** Tokens checked recently, kept until they expire (or a minute, whichever is first). */
const VERIFIED_MS = 60_000;

/**
 * People signed in at the company's identity provider call the API with its access tokens (JWTs):
 * checked against the issuer's published keys (found by OpenID discovery, cached, read again for
 * a key not known yet), its name and this API's audience, and expiry. Their groups give their
 * role and, for a team's group, their tenant; the lifecycle and audit logs name them
 * `user:<email>`.
 */
@Injectable()
export class OidcTokensService {
  private readonly logger = new Logger('Oidc');
  private readonly config: OidcConfig | undefined;
  private keys: { jwks: Jwk[]; at: number } | undefined;
  private reading: Promise<Jwk[]> | undefined;
  private readonly verified = new Map<string, { principal: Principal; until: number }>();

  constructor(
    @Inject(SCHEDULER_CONFIG) config: SchedulerConfig,
    private readonly clock: Clock,
  ) {
    this.config = config.apiAuth.oidc;
  }

  get enabled(): boolean {
    return this.config !== undefined;
  }

  /** The person a token stands for, or why it is refused. */
  async verify(token: string): Promise<Principal | string> {
    const config = this.config;
    if (!config) return 'this API takes API keys only (no identity provider is set up)';
    const now = this.clock.now();
    const hit = this.verified.get(token);
    if (hit && hit.until > now) return hit.principal;
    let claims: Record<string, unknown>;
    try {
      claims = await verifyJwt(
        token,
        config,
        (kid, alg) => this.keyFor(kid, alg),
        Math.floor(now / 1000),
      );
    } catch (err) {
      if (err instanceof JwtRefused) return err.message;
      this.logger.warn(`the identity provider's keys could not be read: ${String(err)}`);
      return `the identity provider (${config.issuer}) could not be reached to check the token`;
    }
    const principal = this.principalOf(config, claims);
    if (typeof principal === 'string') return principal;
    const exp = (claims.exp as number) * 1000;
    this.verified.set(token, { principal, until: Math.min(exp, now + VERIFIED_MS) });
    if (this.verified.size > 10_000) this.verified.clear();
    return principal;
  }

  /** A person's role (their highest group's) and tenant (their team group's, if one). */
  private principalOf(config: OidcConfig, claims: Record<string, unknown>): Principal | string {
    // An email the provider has not verified is not a name to act under: the subject is.
    const chosen =
      config.userClaim === 'email' && claims.email_verified === false
        ? undefined
        : claims[config.userClaim];
    const named = chosen ?? claims.sub;
    if (typeof named !== 'string' || !/^[\x21-\x7e]{1,200}$/.test(named))
      return 'the token names no one this API can log (sub, or the user claim, 1-200 printable characters)';
    const raw = claims[config.groupsClaim];
    const groups = Array.isArray(raw)
      ? raw.filter((g): g is string => typeof g === 'string')
      : typeof raw === 'string'
        ? [raw]
        : [];
    let role: Role | undefined;
    for (const g of groups) {
      const r = config.roleGroups.get(g);
      if (r && (role === undefined || ROLES.indexOf(r) > ROLES.indexOf(role))) role = r;
    }
    if (!role)
      return `${named} is signed in, but none of their groups (${config.groupsClaim}) gives a role here`;
    const tenants = [
      ...new Set(groups.map((g) => config.tenantGroups.get(g)).filter((t) => t !== undefined)),
    ];
    if (tenants.length > 1)
      return `${named} is in the groups of more than one tenant (${tenants.join(', ')}); a person may belong to one`;
    // An admin spans every tenant (task types, keys and the audit log are shared), as admin keys
    // do: an admin's group and a team's together are a mistake in the groups, not a narrower admin.
    if (role === 'admin' && tenants.length > 0)
      return `${named} is in an admin group and in the group of tenant ${tenants[0]}; an admin spans every tenant: take them out of one`;
    return { keyId: null, name: named, role, tenant: tenants[0] ?? null, user: named };
  }

  /** The issuer's key a token names: from the keys read, or read again (not too often). */
  private async keyFor(kid: string | undefined, alg: string): Promise<Jwk | undefined> {
    const now = this.clock.now();
    const kty = keyTypeOf(alg);
    const find = (jwks: Jwk[]): Jwk | undefined =>
      jwks.find(
        (k) =>
          (kid === undefined || k.kid === kid) &&
          k.kty === kty &&
          (k.alg === undefined || k.alg === alg) &&
          k.use !== 'enc',
      );
    if (this.keys && now - this.keys.at < KEYS_FOR_MS) {
      const known = find(this.keys.jwks);
      if (known || now - this.keys.at < REREAD_AFTER_MS) return known;
    }
    try {
      return find(await this.read());
    } catch (err) {
      // The issuer cannot be read just now: the keys it last published still check tokens (for
      // a while), rather than every person being refused for an outage of the provider.
      if (this.keys && now - this.keys.at < STALE_KEYS_MS) return find(this.keys.jwks);
      throw err;
    }
  }

  private read(): Promise<Jwk[]> {
    this.reading ??= readIssuerKeys(this.config as OidcConfig)
      .then((jwks) => {
        this.keys = { jwks, at: this.clock.now() };
        return jwks;
      })
      .finally(() => (this.reading = undefined));
    return this.reading;
  }
}
