import { KeyObject, createHash, generateKeyPairSync, randomBytes, sign } from 'node:crypto';
import { request } from 'undici';
import { RunningProcess, startProcess } from './processes';

export const PROVIDER = 'test/fixtures/oidc-provider/provider.mjs';

/** A client of the test identity provider, as its metadata registers it. */
export interface OidcClient {
  client_id: string;
  client_secret?: string;
  redirect_uris: string[];
  token_endpoint_auth_method?: string;
  grant_types?: string[];
  post_logout_redirect_uris?: string[];
}

/** A client that signs people in from a test, by HTTP alone (no browser). */
export const TEST_CLIENT: OidcClient = {
  client_id: 'baton-tests',
  token_endpoint_auth_method: 'none',
  redirect_uris: ['http://127.0.0.1/callback'],
};

const b64 = (v: unknown): string => Buffer.from(JSON.stringify(v)).toString('base64url');

/**
 * The test identity provider (test/fixtures/oidc-provider): a real `oidc-provider` process with a
 * key this test made, so the test can also sign tokens the provider never would (expired, for
 * another audience) and see the scheduler refuse them for the right reason.
 */
export class IdentityProvider {
  private constructor(
    readonly proc: RunningProcess,
    readonly issuer: string,
    private readonly key: KeyObject,
    private readonly kid: string,
  ) {}

  static async start(clients: OidcClient[] = [TEST_CLIENT]): Promise<IdentityProvider> {
    const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
    const kid = `test-${randomBytes(4).toString('hex')}`;
    const jwk = {
      ...(privateKey.export({ format: 'jwk' }) as object),
      kid,
      use: 'sig',
      alg: 'RS256',
    };
    const proc = await startProcess(PROVIDER, {
      PORT: '0',
      OIDC_JWKS: JSON.stringify({ keys: [jwk] }),
      OIDC_CLIENTS: JSON.stringify(clients),
    });
    return new IdentityProvider(proc, proc.url, privateKey, kid);
  }

  async stop(): Promise<void> {
    await this.proc.stop();
  }

  /**
   * A token signed with the provider's own key, with these claims over a valid access token's,
   * issued at `nowMs` (the scheduler's clock: a test's ManualClock).
   */
  forge(claims: Record<string, unknown>, nowMs: number): string {
    const now = Math.floor(nowMs / 1000);
    const body = {
      iss: this.issuer,
      aud: 'baton-api',
      sub: 'alice',
      email: 'alice@example.com',
      groups: ['baton-admins'],
      iat: now,
      exp: now + 300,
      ...claims,
    };
    const head = `${b64({ alg: 'RS256', kid: this.kid, typ: 'at+jwt' })}.${b64(body)}`;
    return `${head}.${sign('sha256', Buffer.from(head), this.key).toString('base64url')}`;
  }

  /**
   * Signs `login` in through the provider's own pages (its authorization endpoint, the login form,
   * the code for a token, with PKCE), as a command-line client would; the tokens it gives.
   */
  async signIn(
    login: string,
    client: OidcClient = TEST_CLIENT,
  ): Promise<{ access_token: string; id_token: string }> {
    const jar = new Map<string, string>();
    const call = async (url: string, init: { method?: string; body?: string } = {}) => {
      const res = await request(new URL(url, this.issuer), {
        method: (init.method ?? 'GET') as 'GET',
        headers: {
          cookie: [...jar].map(([k, v]) => `${k}=${v}`).join('; '),
          ...(init.body ? { 'content-type': 'application/x-www-form-urlencoded' } : {}),
        },
        body: init.body,
      });
      const set = res.headers['set-cookie'];
      for (const c of Array.isArray(set) ? set : set ? [set] : []) {
        const [pair] = c.split(';');
        const at = pair.indexOf('=');
        jar.set(pair.slice(0, at), pair.slice(at + 1));
      }
      const text = await res.body.text();
      return { status: res.statusCode, location: res.headers.location as string | undefined, text };
    };
    const verifier = randomBytes(32).toString('base64url');
    const challenge = createHash('sha256').update(verifier).digest('base64url');
    const redirect = client.redirect_uris[0];
    const auth = new URLSearchParams({
      client_id: client.client_id,
      response_type: 'code',
      redirect_uri: redirect,
      scope: 'openid email groups',
      code_challenge: challenge,
      code_challenge_method: 'S256',
      state: randomBytes(8).toString('hex'),
      nonce: randomBytes(8).toString('hex'),
    });
    let step = await call(`/auth?${auth.toString()}`);
    for (let hops = 0; hops < 10; hops++) {
      const to = step.location;
      if (!to) throw new Error(`the sign-in of ${login} stopped at ${step.status}: ${step.text}`);
      if (to.startsWith(redirect)) {
        const code = new URL(to).searchParams.get('code');
        if (!code) throw new Error(`no code for ${login}: ${to}`);
        const token = await request(new URL('/token', this.issuer), {
          method: 'POST',
          headers: { 'content-type': 'application/x-www-form-urlencoded' },
          body: new URLSearchParams({
            grant_type: 'authorization_code',
            code,
            redirect_uri: redirect,
            client_id: client.client_id,
            code_verifier: verifier,
          }).toString(),
        });
        const json = (await token.body.json()) as Record<string, string>;
        if (token.statusCode !== 200 || !json.access_token)
          throw new Error(`no token for ${login}: ${JSON.stringify(json)}`);
        return { access_token: json.access_token, id_token: json.id_token };
      }
      const m = /\/interaction\/([^/?]+)$/.exec(new URL(to, this.issuer).pathname);
      step = m
        ? await call(`/interaction/${m[1]}`, {
            method: 'POST',
            body: new URLSearchParams({ prompt: 'login', login, password: 'x' }).toString(),
          })
        : await call(to);
    }
    throw new Error(`the sign-in of ${login} went round in circles`);
  }
}
