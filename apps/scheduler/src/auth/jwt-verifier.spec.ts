import { KeyObject, createHmac, generateKeyPairSync, sign } from 'node:crypto';
import { Jwk, JwtRefused, JwtRules, looksLikeJwt, verifyJwt } from './jwt-verifier';

const NOW = 1_800_000_000;
const RULES: JwtRules = {
  issuer: 'https://id.example.com',
  audience: 'baton-api',
  algorithms: ['RS256', 'PS256', 'ES256', 'EdDSA'],
  leewaySec: 30,
};

const rsa = generateKeyPairSync('rsa', { modulusLength: 2048 });
const ec = generateKeyPairSync('ec', { namedCurve: 'P-256' });
const ed = generateKeyPairSync('ed25519');
const other = generateKeyPairSync('rsa', { modulusLength: 2048 });

const jwkOf = (key: KeyObject, kid: string): Jwk => ({
  ...(key.export({ format: 'jwk' }) as Jwk),
  kid,
  use: 'sig',
});
const KEYS: Jwk[] = [
  jwkOf(rsa.publicKey, 'rsa-1'),
  jwkOf(ec.publicKey, 'ec-1'),
  jwkOf(ed.publicKey, 'ed-1'),
];
const find = async (kid: string | undefined): Promise<Jwk | undefined> =>
  KEYS.find((k) => k.kid === kid);

const b64 = (v: unknown): string => Buffer.from(JSON.stringify(v)).toString('base64url');

/** A token as an issuer makes one: header and claims signed with `alg` by `key`. */
function token(
  claims: Record<string, unknown>,
  { alg = 'RS256', kid = 'rsa-1', key = rsa.privateKey as KeyObject } = {},
): string {
  const head = `${b64({ alg, kid, typ: 'at+jwt' })}.${b64({
    iss: RULES.issuer,
    aud: RULES.audience,
    sub: 'alice',
    exp: NOW + 300,
    iat: NOW,
    ...claims,
  })}`;
  const data = Buffer.from(head);
  const sig =
    alg === 'RS256'
      ? sign('sha256', data, key)
      : alg === 'PS256'
        ? sign('sha256', data, { key, padding: 6, saltLength: 32 })
        : alg === 'ES256'
          ? sign('sha256', data, { key, dsaEncoding: 'ieee-p1363' })
          : sign(null, data, key);
  return `${head}.${sig.toString('base64url')}`;
}

const refusal = async (t: string, rules = RULES): Promise<string> => {
  try {
    await verifyJwt(t, rules, find, NOW);
  } catch (err) {
    if (err instanceof JwtRefused) return err.message;
    throw err;
  }
  return 'taken';
};

describe('verifyJwt', () => {
  it('takes a token signed by each allowed algorithm, and gives its claims', async () => {
    for (const [alg, kid, key] of [
      ['RS256', 'rsa-1', rsa.privateKey],
      ['PS256', 'rsa-1', rsa.privateKey],
      ['ES256', 'ec-1', ec.privateKey],
      ['EdDSA', 'ed-1', ed.privateKey],
    ] as const) {
      const claims = await verifyJwt(token({ email: 'a@x' }, { alg, kid, key }), RULES, find, NOW);
      expect([alg, claims.email, claims.sub]).toEqual([alg, 'a@x', 'alice']);
    }
    // An audience among several; a clock a little behind the issuer's.
    expect(await refusal(token({ aud: ['other', 'baton-api'] }))).toBe('taken');
    expect(await refusal(token({ exp: NOW - 10, nbf: NOW + 10 }))).toBe('taken');
  });

  it('refuses what does not hold, saying what', async () => {
    expect(await refusal(token({ exp: NOW - 31 }))).toBe('the token has expired');
    expect(await refusal(token({ exp: undefined }))).toBe('the token has no expiry (exp)');
    expect(await refusal(token({ nbf: NOW + 60 }))).toBe('the token is not valid yet (nbf)');
    expect(await refusal(token({ aud: 'another-api' }))).toBe(
      'the token is not for this API (audience baton-api)',
    );
    expect(await refusal(token({ iss: 'https://evil.example.com' }))).toBe(
      'the token was issued by https://evil.example.com, not https://id.example.com',
    );
    // Signed by a key the issuer does not publish under that kid.
    expect(await refusal(token({}, { key: other.privateKey }))).toBe(
      'the token’s signature does not hold',
    );
    expect(await refusal(token({}, { kid: 'rsa-2' }))).toBe('the issuer publishes no key rsa-2');
    // A key of another kind than the algorithm needs.
    expect(await refusal(token({}, { alg: 'ES256', kid: 'rsa-1', key: ec.privateKey }))).toBe(
      "the issuer's key rsa-1 is not one for ES256",
    );
    // Claims changed after signing.
    const [h, , s] = token({}).split('.');
    expect(
      await refusal(`${h}.${b64({ iss: RULES.issuer, aud: 'baton-api', exp: NOW + 9 })}.${s}`),
    ).toBe('the token’s signature does not hold');
  });

  it('never takes an unsigned token, an HMAC one keyed with a public key, or another algorithm', async () => {
    const claims = b64({ iss: RULES.issuer, aud: 'baton-api', sub: 'x', exp: NOW + 60 });
    expect(await refusal(`${b64({ alg: 'none' })}.${claims}.`)).toBe('not a JWT');
    expect(await refusal(`${b64({ alg: 'none' })}.${claims}.AA`)).toMatch(/signed with none/);
    // The classic confusion: HS256 keyed with the issuer's public key.
    const head = `${b64({ alg: 'HS256', kid: 'rsa-1' })}.${claims}`;
    const mac = createHmac('sha256', rsa.publicKey.export({ format: 'pem', type: 'spki' }))
      .update(head)
      .digest('base64url');
    expect(await refusal(`${head}.${mac}`)).toMatch(/signed with HS256; this API takes/);
    expect(await refusal(token({}), { ...RULES, algorithms: ['ES256'] })).toBe(
      'the token is signed with RS256; this API takes ES256',
    );
    expect(await refusal(`${b64({ alg: 'RS256', crit: ['x'] })}.${claims}.AA`)).toBe(
      'the token has critical header parameters',
    );
    expect(await refusal('bm90.anNvbg.AA')).toBe("the token's header is not a JSON object");
  });

  it('refuses an ID token, and a key on another curve than the algorithm names', async () => {
    expect(await refusal(token({ nonce: 'n-1' }))).toBe(
      'the token is an ID token, not an access token',
    );
    const idTyped = `${b64({ alg: 'RS256', kid: 'rsa-1', typ: 'id_token+jwt' })}.${b64({})}.AA`;
    expect(await refusal(idTyped)).toBe('the token is a id_token+jwt, not an access token');
    const p384 = generateKeyPairSync('ec', { namedCurve: 'P-384' });
    const keys = [...KEYS, jwkOf(p384.publicKey, 'ec-384')];
    const onP384 = token({}, { alg: 'ES256', kid: 'ec-384', key: p384.privateKey });
    await expect(
      verifyJwt(onP384, RULES, async (kid) => keys.find((k) => k.kid === kid), NOW),
    ).rejects.toThrow("the issuer's key ec-384 is not one for ES256");
  });

  it('tells a JWT from an API key by its shape', () => {
    expect(looksLikeJwt(token({}))).toBe(true);
    expect(looksLikeJwt('bk_7f3a9c0e2d4b6a8c1e3f5a7b9d0c2e4f')).toBe(false);
    expect(looksLikeJwt('a.b')).toBe(false);
    expect(looksLikeJwt('a.b.c.d')).toBe(false);
  });
});
