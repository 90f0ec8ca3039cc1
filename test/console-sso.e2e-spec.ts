import { Page } from 'playwright-core';
import { request } from 'undici';
import { ConsoleHarness, PHONE, DESKTOP } from './support/console-harness';
import { IdentityProvider, TEST_CLIENT } from './support/oidc';
import { freePort } from './support/processes';

jest.setTimeout(240_000);

const SECRET = 'console-client-secret-0123456789';

/**
 * Single sign-on in a real browser: the console sends people to a real OpenID Connect provider
 * (`oidc-provider`, its own login page), keeps their session on its server, and calls the API
 * with their access token; the scheduler gives them the role their groups say, and their actions
 * are theirs in the lifecycle log.
 */
describe('signing in to the console at the identity provider', () => {
  let idp: IdentityProvider;
  let h: ConsoleHarness;
  let page: Page;

  beforeAll(async () => {
    const port = await freePort();
    const consoleUrl = `http://127.0.0.1:${port}`;
    idp = await IdentityProvider.start([
      TEST_CLIENT,
      {
        client_id: 'baton-console',
        client_secret: SECRET,
        redirect_uris: [`${consoleUrl}/auth/callback`],
        post_logout_redirect_uris: [`${consoleUrl}/`],
        grant_types: ['authorization_code', 'refresh_token'],
        token_endpoint_auth_method: 'client_secret_basic',
      },
    ]);
    h = await ConsoleHarness.start(
      'console-sso-worker',
      {
        BATON_OIDC_ISSUER: idp.issuer,
        BATON_OIDC_AUDIENCE: 'baton-api',
        BATON_OIDC_ROLE_GROUPS: 'baton-admins=admin,baton-operators=operator,baton-viewers=viewer',
      },
      {
        CONSOLE_PORT: String(port),
        CONSOLE_PUBLIC_URL: consoleUrl,
        CONSOLE_OIDC_ISSUER: idp.issuer,
        CONSOLE_OIDC_CLIENT_ID: 'baton-console',
        CONSOLE_OIDC_CLIENT_SECRET: SECRET,
        CONSOLE_OIDC_RESOURCE: 'urn:baton:api',
      },
    );
    page = h.page;
    // Nothing leaves the machine: the provider's pages ask for a web font, which is refused.
    await h.context.route(/^https?:\/\/(?!127\.0\.0\.1[:/])/, (route) => route.abort());
  });

  afterAll(async () => {
    if (h?.pageErrors.length) console.log(`script errors:\n${h.pageErrors.join('\n')}`);
    await h?.stop();
    await idp?.stop();
  });

  /** Through the console's button and the provider's own login page, back to `landing`. */
  const signIn = async (login: string, landing: string): Promise<void> => {
    await page.getByRole('link', { name: 'Sign in with your company account' }).click();
    await page.waitForURL((u) => u.href.startsWith(idp.issuer));
    await page.locator('input[name="login"]').fill(login);
    await page.locator('input[name="password"]').fill('any password');
    await page.getByRole('button', { name: 'Sign-in' }).click();
    await h.heading(landing).waitFor({ timeout: 30_000 });
    await page.getByText(`Signed in as ${login}@example.com`).waitFor();
  };

  it('a viewer signs in, reads, may not act, and signs out', async () => {
    await page.goto(h.url('/tasks'));
    await page.getByRole('link', { name: 'Sign in with your company account' }).waitFor();
    // The API key stays a way in, for machines' keys.
    await page.getByLabel('API key').waitFor();
    expect(await h.axeViolations()).toEqual([]);
    await h.shot('sso-sign-in');
    await signIn('victor', 'Tasks');
    // No secret in the page: the session is an HttpOnly cookie the scripts cannot read.
    const seen = await page.evaluate(() => {
      const w = globalThis as unknown as { document: { cookie: string }; sessionStorage: object };
      return { cookie: w.document.cookie, stored: JSON.stringify(w.sessionStorage) };
    });
    expect(seen).toEqual({ cookie: '', stored: '{}' });

    // Reads work; an action is refused by the scheduler with the person's name and role.
    await page.getByRole('link', { name: 'New task' }).click();
    await h.heading('New task').waitFor();
    await page.getByLabel('Type', { exact: true }).selectOption('demo.echo');
    await page.getByLabel('Name', { exact: true }).fill('by victor');
    await page.getByRole('button', { name: 'Create task' }).click();
    await page
      .getByRole('alert')
      .getByText('victor@example.com (viewer) may not do this: it needs operator')
      .waitFor();
    expect(await h.axeViolations()).toEqual([]);
    await h.shot('sso-viewer-refused');

    // A change through the console's address without its pages' header (another site's form
    // posting with the cookie) is refused before the scheduler.
    const forged = await page.evaluate(async () => {
      const res = await fetch('/api/v1/tasks', {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ create_info: { task_type: 'demo.echo', task_name: 'forged' } }),
      });
      return { status: res.status, body: (await res.json()) as { code: number } };
    });
    expect([forged.status, forged.body.code]).toEqual([403, 40300]);

    // Signing out ends the console's session, then the provider's (its own page asks).
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.waitForURL((u) => u.href.startsWith(idp.issuer));
    await page.getByRole('button', { name: 'Yes, sign me out' }).click();
    await page.getByRole('link', { name: 'Sign in with your company account' }).waitFor({
      timeout: 30_000,
    });
    // The session is gone on the server too: the API through the console is 401 again.
    const after = await page.evaluate(async () => (await fetch('/api/v1/tasks')).status);
    expect(after).toBe(401);
  });

  it('takes the way back from the provider only in the browser that set out (no login CSRF)', async () => {
    // Someone starts a sign-in and hands its way back to another browser (without their cookie).
    const start = await request(h.url('/auth/login'));
    await start.body.dump();
    expect(start.statusCode).toBe(302);
    const state = new URL(String(start.headers.location)).searchParams.get('state') ?? '';
    expect(String(start.headers['set-cookie'])).toMatch(/baton_sign_in=.*HttpOnly/);
    const elsewhere = await request(h.url(`/auth/callback?state=${state}&code=whatever`));
    expect(elsewhere.statusCode).toBe(400);
    expect(await elsewhere.body.text()).toContain('not one the console started');
    expect(elsewhere.headers['set-cookie']).toBeUndefined();
  });

  it('an admin signs in, acts in their own name, at desktop and phone width', async () => {
    await page.goto(h.url('/'));
    await signIn('alice', 'Overview');
    await page.goto(h.url('/tasks/new'));
    await h.heading('New task').waitFor();
    await page.getByLabel('Type', { exact: true }).selectOption('demo.echo');
    await page.getByLabel('Name', { exact: true }).fill('by alice');
    await page.getByRole('button', { name: 'Create task' }).click();
    await page.waitForURL(/\/tasks\/[0-9A-Z]{26}$/);
    const taskId = new URL(page.url()).pathname.split('/').pop() as string;
    await h.heading('by alice').waitFor();
    const events = await h.api.events(taskId);
    expect(events[0].actor).toBe('user:alice@example.com');
    await page.getByText('user:alice@example.com').first().waitFor();
    for (const size of [DESKTOP, PHONE]) {
      await page.setViewportSize(size);
      expect(await h.axeViolations()).toEqual([]);
    }
    await h.shot('sso-admin-task');
    await page.setViewportSize(DESKTOP);
  });
});
