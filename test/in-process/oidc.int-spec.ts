import { generateKeyPairSync, sign } from 'node:crypto';
import { Api } from '../support/baton';
import { InProcessBaton, startWithWorker } from '../support/in-process';
import { IdentityProvider } from '../support/oidc';

jest.setTimeout(120_000);

/**
 * Single sign-on for API clients: people signed in at a real OpenID Connect provider (a process
 * of `oidc-provider`, test/fixtures/oidc-provider) call the API with its access tokens; their
 * groups give their role and tenant, and what they do is theirs in the logs. API keys go on
 * working beside them.
 */
describe('people signed in at the identity provider', () => {
  let idp: IdentityProvider;
  let baton: InProcessBaton;
  /** The API as `login` would call it, with the access token the provider gave them. */
  const as = async (login: string): Promise<Api> =>
    new Api(baton.api.base, (await idp.signIn(login)).access_token);

  beforeAll(async () => {
    idp = await IdentityProvider.start();
    baton = await startWithWorker({
      BATON_OIDC_ISSUER: idp.issuer,
      BATON_OIDC_AUDIENCE: 'baton-api',
      BATON_OIDC_ROLE_GROUPS: 'baton-admins=admin,baton-operators=operator,baton-viewers=viewer',
      BATON_OIDC_TENANT_GROUPS: 'payments-team=payments',
    });
  });

  afterAll(async () => {
    await baton?.stop();
    await idp?.stop();
  });

  it('an admin acts in their own name, in the lifecycle and the audit log', async () => {
    const alice = await as('alice');
    const made = await alice.call<{ task_id: string }>('POST', '/v1/tasks', {
      create_info: { task_type: 'demo.echo', task_name: 'by alice' },
    });
    expect(made.status).toBe(201);
    expect((await alice.events(made.data.task_id))[0].actor).toBe('user:alice@example.com');
    const timer = await alice.call<{ timer_id: string }>('POST', '/v1/timers', {
      name: 'alice timer',
      schedule: { kind: 'cron', cron: '0 0 3 * * *' },
      task: { create_info: { task_type: 'demo.echo', task_name: 'nightly' } },
    });
    expect(timer.status).toBe(201);
    const audit = await baton.api.call<{ action: string; actor: string }[]>(
      'GET',
      '/v1/audit?limit=20',
    );
    expect(audit.data.find((e) => e.action === 'timer.create')?.actor).toBe(
      'user:alice@example.com',
    );
    // An admin's route: keys are an admin's to list.
    expect((await alice.call('GET', '/v1/api-keys')).status).toBe(200);
  });

  it("a viewer reads and may not act; an operator's team group holds them to its tenant", async () => {
    const victor = await as('victor');
    expect((await victor.call('GET', '/v1/tasks')).status).toBe(200);
    const refused = await victor.call('POST', '/v1/tasks', {
      create_info: { task_type: 'demo.echo', task_name: 'by victor' },
    });
    expect([refused.status, refused.message]).toEqual([
      403,
      'victor@example.com (viewer) may not do this: it needs operator',
    ]);

    const elsewhere = await baton.api.create({
      create_info: { task_type: 'demo.echo', task_name: 'default tenant' },
    });
    const tess = await as('tess');
    const made = await tess.call<{ task_id: string; tenant: string }>('POST', '/v1/tasks', {
      create_info: { task_type: 'demo.echo', task_name: 'by tess' },
    });
    expect([made.status, made.data.tenant]).toEqual([201, 'payments']);
    expect((await tess.call('GET', `/v1/tasks/${elsewhere}`)).status).toBe(404);
    const other = await tess.call('POST', '/v1/tasks', {
      create_info: { task_type: 'demo.echo', task_name: 'elsewhere' },
      tenant: 'default',
    });
    expect(other.status).toBe(403);
  });

  it('refuses a person with no role, an expired token, another audience, another signer', async () => {
    const nora = await as('nora');
    const none = await nora.call('GET', '/v1/tasks');
    expect([none.status, none.message]).toEqual([
      401,
      'nora@example.com is signed in, but none of their groups (groups) gives a role here',
    ]);
    // An admin's group with a team's: refused, not an admin held to one tenant (who could make
    // themselves a key for every tenant).
    const ada = await (await as('ada')).call('POST', '/v1/api-keys', { name: 'x', role: 'admin' });
    expect([ada.status, ada.message]).toEqual([
      401,
      'ada@example.com is in an admin group and in the group of tenant payments; an admin spans every tenant: take them out of one',
    ]);
    const nowMs = baton.clock.now();
    const now = Math.floor(nowMs / 1000);
    const expired = await new Api(baton.api.base, idp.forge({ exp: now - 120 }, nowMs)).call(
      'GET',
      '/v1/tasks',
    );
    expect([expired.status, expired.message]).toEqual([401, 'the token has expired']);
    const foreign = await new Api(baton.api.base, idp.forge({ aud: 'another-api' }, nowMs)).call(
      'GET',
      '/v1/tasks',
    );
    expect([foreign.status, foreign.message]).toEqual([
      401,
      'the token is not for this API (audience baton-api)',
    ]);
    // The provider's kid, another key's signature.
    const real = idp.forge({}, nowMs);
    const [head, body] = real.split('.');
    const stranger = generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey;
    const fake = `${head}.${body}.${sign('sha256', Buffer.from(`${head}.${body}`), stranger).toString('base64url')}`;
    const signed = await new Api(baton.api.base, fake).call('GET', '/v1/tasks');
    expect([signed.status, signed.message]).toEqual([401, 'the token’s signature does not hold']);
    // The real one goes; an API key still does too.
    expect((await new Api(baton.api.base, real).call('GET', '/v1/tasks')).status).toBe(200);
    expect((await baton.api.call('GET', '/v1/tasks')).status).toBe(200);
  });
});
