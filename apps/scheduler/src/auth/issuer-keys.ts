import { request } from 'undici';
import type { OidcConfig } from '../config';
import type { Jwk } from './jwt-verifier';

/** A call to the issuer gives up after this long. */
const CALL_MS = 5000;

/**
 * The keys an OpenID Connect issuer signs with: its discovery document
 * (`<issuer>/.well-known/openid-configuration`, which must name the same issuer) gives its JWKS.
 */
export async function readIssuerKeys(config: OidcConfig): Promise<Jwk[]> {
  const discovery = await getJson(
    `${config.issuer.replace(/\/$/, '')}/.well-known/openid-configuration`,
  );
  if (discovery.issuer !== config.issuer)
    throw new Error(`the discovery document names issuer ${String(discovery.issuer)}`);
  if (typeof discovery.jwks_uri !== 'string') throw new Error('no jwks_uri in discovery');
  const jwks = await getJson(discovery.jwks_uri);
  if (!Array.isArray(jwks.keys)) throw new Error('the JWKS has no keys');
  return jwks.keys as Jwk[];
}

async function getJson(url: string): Promise<Record<string, unknown>> {
  const res = await request(url, {
    method: 'GET',
    headers: { accept: 'application/json' },
    headersTimeout: CALL_MS,
    bodyTimeout: CALL_MS,
  });
  if (res.statusCode !== 200) {
    await res.body.dump();
    throw new Error(`${url} answered ${res.statusCode}`);
  }
  return (await res.body.json()) as Record<string, unknown>;
}
