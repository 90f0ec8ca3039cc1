import { KeyObject, createPublicKey, verify as verifySignature } from 'node:crypto';

/** The signing algorithms a token may use, and how node:crypto checks each. */
const ALGORITHMS: Record<
  string,
  { digest: string | null; kty: string; padding?: number; p1363?: boolean }
> = {
  RS256: { digest: 'sha256', kty: 'RSA' },
  RS384: { digest: 'sha384', kty: 'RSA' },
  RS512: { digest: 'sha512', kty: 'RSA' },
  // RSASSA-PSS with a salt as long as the digest (RFC 7518 3.5).
  PS256: { digest: 'sha256', kty: 'RSA', padding: 6 },
  PS384: { digest: 'sha384', kty: 'RSA', padding: 6 },
  PS512: { digest: 'sha512', kty: 'RSA', padding: 6 },
  // ECDSA signatures in JWS are r || s (IEEE P1363), not DER.
  ES256: { digest: 'sha256', kty: 'EC', p1363: true },
  ES384: { digest: 'sha384', kty: 'EC', p1363: true },
  ES512: { digest: 'sha512', kty: 'EC', p1363: true },
  EdDSA: { digest: null, kty: 'OKP' },
};

/** The asymmetric algorithms the verifier knows (never `none`, never an HMAC). */
export const KNOWN_ALGORITHMS = Object.keys(ALGORITHMS);

/** The JWK key type an algorithm needs (`RSA`, `EC`, `OKP`), or undefined for one not known. */
export const keyTypeOf = (alg: string): string | undefined => ALGORITHMS[alg]?.kty;

/** The curve an ECDSA algorithm signs on (RFC 7518 3.4). */
const CURVES: Record<string, string> = { ES256: 'P-256', ES384: 'P-384', ES512: 'P-521' };

/** What an access token's `typ` may be (RFC 9068), or absent. An ID token is not one. */
const ACCESS_TYPES = ['at+jwt', 'application/at+jwt', 'jwt'];

/** A public key as a JWKS lists it. */
export interface Jwk {
  kty: string;
  kid?: string;
  alg?: string;
  use?: string;
  [member: string]: unknown;
}

/** What a token must be to be taken. */
export interface JwtRules {
  issuer: string;
  audience: string;
  algorithms: readonly string[];
  /** Seconds a clock may be off between the issuer and here. */
  leewaySec: number;
}

/** A token refused, and why (said to the caller: nothing secret in it). */
export class JwtRefused extends Error {}

/** Finds the issuer's public key a token names (`kid`), reading the JWKS again if it must. */
export type KeyFinder = (kid: string | undefined, alg: string) => Promise<Jwk | undefined>;

const B64URL = /^[A-Za-z0-9_-]+$/;

function part(text: string, what: string): Record<string, unknown> {
  try {
    const value: unknown = JSON.parse(Buffer.from(text, 'base64url').toString('utf8'));
    if (value && typeof value === 'object' && !Array.isArray(value))
      return value as Record<string, unknown>;
  } catch {
    // below
  }
  throw new JwtRefused(`the token's ${what} is not a JSON object`);
}

/** Whether `token` has the shape of a JWS in compact form (three base64url parts). */
export function looksLikeJwt(token: string): boolean {
  const parts = token.split('.');
  return parts.length === 3 && parts.every((p) => B64URL.test(p));
}

/**
 * Checks a JWT as an OAuth resource server does: an allowed asymmetric algorithm, a signature by
 * a key the issuer publishes, and the issuer, audience, expiry and not-before claims (RFC 7519,
 * RFC 9068). Its claims, or JwtRefused saying what did not hold.
 */
export async function verifyJwt(
  token: string,
  rules: JwtRules,
  findKey: KeyFinder,
  nowSec: number,
): Promise<Record<string, unknown>> {
  if (!looksLikeJwt(token)) throw new JwtRefused('not a JWT');
  const [h, p, s] = token.split('.');
  const header = part(h, 'header');
  const alg = header.alg;
  if (typeof alg !== 'string' || !rules.algorithms.includes(alg) || !ALGORITHMS[alg])
    throw new JwtRefused(
      `the token is signed with ${String(alg)}; this API takes ${rules.algorithms.join(', ')}`,
    );
  if (header.crit !== undefined) throw new JwtRefused('the token has critical header parameters');
  if (header.typ !== undefined && !ACCESS_TYPES.includes(String(header.typ).toLowerCase()))
    throw new JwtRefused(`the token is a ${String(header.typ)}, not an access token`);
  const kid = typeof header.kid === 'string' ? header.kid : undefined;
  const jwk = await findKey(kid, alg);
  if (!jwk) throw new JwtRefused(`the issuer publishes no key ${kid ?? 'for this token'}`);
  const spec = ALGORITHMS[alg];
  if (
    jwk.kty !== spec.kty ||
    (jwk.alg !== undefined && jwk.alg !== alg) ||
    jwk.use === 'enc' ||
    (CURVES[alg] !== undefined && jwk.crv !== CURVES[alg]) ||
    (alg === 'EdDSA' && jwk.crv !== 'Ed25519' && jwk.crv !== 'Ed448')
  )
    throw new JwtRefused(`the issuer's key ${kid ?? ''} is not one for ${alg}`);
  let key: KeyObject;
  try {
    key = createPublicKey({ key: jwk as never, format: 'jwk' });
  } catch {
    throw new JwtRefused(`the issuer's key ${kid ?? ''} cannot be read`);
  }
  let ok: boolean;
  try {
    ok = verifySignature(
      spec.digest,
      Buffer.from(`${h}.${p}`),
      {
        key,
        ...(spec.padding ? { padding: spec.padding, saltLength: -1 } : {}),
        ...(spec.p1363 ? { dsaEncoding: 'ieee-p1363' as const } : {}),
      },
      Buffer.from(s, 'base64url'),
    );
  } catch {
    throw new JwtRefused(`the issuer's key ${kid ?? ''} cannot check ${alg} signatures`);
  }
  if (!ok) throw new JwtRefused('the token’s signature does not hold');
  const claims = part(p, 'payload');
  // An ID token (it carries the sign-in's nonce) is for the client that asked, not a credential.
  if (claims.nonce !== undefined)
    throw new JwtRefused('the token is an ID token, not an access token');
  if (claims.iss !== rules.issuer)
    throw new JwtRefused(`the token was issued by ${String(claims.iss)}, not ${rules.issuer}`);
  const aud = claims.aud;
  const audiences = Array.isArray(aud) ? aud : [aud];
  if (!audiences.includes(rules.audience))
    throw new JwtRefused(`the token is not for this API (audience ${rules.audience})`);
  if (typeof claims.exp !== 'number') throw new JwtRefused('the token has no expiry (exp)');
  if (claims.exp + rules.leewaySec <= nowSec) throw new JwtRefused('the token has expired');
  if (typeof claims.nbf === 'number' && claims.nbf - rules.leewaySec > nowSec)
    throw new JwtRefused('the token is not valid yet (nbf)');
  return claims;
}
