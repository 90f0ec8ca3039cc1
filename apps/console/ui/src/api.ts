/**
 * Calls to the scheduler's public API through the console (`/api/v1/...`). The API key a person
 * gave is kept in this tab's sessionStorage (gone when the tab closes) and sent with each call;
 * the console itself adds none.
 */
const KEY_ITEM = 'baton.apiKey';
const UNAUTHORIZED = 'baton:unauthorized';

export const apiKey = {
  get: (): string | null => sessionStorage.getItem(KEY_ITEM),
  set: (key: string): void => sessionStorage.setItem(KEY_ITEM, key),
  clear: (): void => sessionStorage.removeItem(KEY_ITEM),
};

/** Runs `listener` whenever the API refuses the key (401); answers the unsubscribe. */
export function onUnauthorized(listener: () => void): () => void {
  window.addEventListener(UNAUTHORIZED, listener);
  return () => window.removeEventListener(UNAUTHORIZED, listener);
}

/** A refusal in the API's envelope: HTTP status, the API's code and its message. */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: number,
    message: string,
    readonly data: unknown,
  ) {
    super(message);
  }
}

interface Envelope<T> {
  code: number;
  message: string;
  data: T;
}

export async function api<T>(
  path: string,
  init: { method?: string; body?: unknown; key?: string; headers?: Record<string, string> } = {},
): Promise<T> {
  const key = init.key ?? apiKey.get();
  // Says the call comes from the console's pages: a change made with a sign-in cookie needs it.
  const headers: Record<string, string> = {
    ...init.headers,
    accept: 'application/json',
    'x-baton-console': '1',
  };
  if (key) headers.authorization = `Bearer ${key}`;
  if (init.body !== undefined) headers['content-type'] = 'application/json';
  let res: Response;
  try {
    res = await fetch(`/api${path}`, {
      method: init.method ?? 'GET',
      headers,
      body: init.body === undefined ? undefined : JSON.stringify(init.body),
    });
  } catch {
    throw new ApiError(0, 0, 'the console did not answer: check the network and reload', null);
  }
  let json: Envelope<T> | undefined;
  try {
    json = (await res.json()) as Envelope<T>;
  } catch {
    json = undefined;
  }
  if (!res.ok || !json || json.code !== 0) {
    if (res.status === 401 && init.key === undefined) window.dispatchEvent(new Event(UNAUTHORIZED));
    throw new ApiError(
      res.status,
      json?.code ?? res.status * 100,
      json?.message ?? `the API answered ${res.status}`,
      json?.data ?? null,
    );
  }
  return json.data;
}

/** `?a=1&b=2` from the defined values of `params`, or '' when there are none. */
export function queryString(params: Record<string, string | number | undefined | null>): string {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params))
    if (v !== undefined && v !== null && v !== '') q.set(k, String(v));
  const s = q.toString();
  return s ? `?${s}` : '';
}

/** The person signed in through the console's single sign-on, or null (none, or it ended). */
export async function signedInUser(): Promise<string | null> {
  try {
    const res = await fetch('/auth/me', { headers: { accept: 'application/json' } });
    if (!res.ok) return null;
    return ((await res.json()) as { user?: string }).user ?? null;
  } catch {
    return null;
  }
}

/** Whether the console offers single sign-on (else an API key is the way in). */
export async function singleSignOn(): Promise<boolean> {
  try {
    const res = await fetch('/auth/config', { headers: { accept: 'application/json' } });
    return res.ok && ((await res.json()) as { oidc?: boolean }).oidc === true;
  } catch {
    return false;
  }
}

/** Ends the console's session; where to go next (the provider's sign-out, or the console). */
export async function signOut(): Promise<string> {
  const res = await fetch('/auth/logout', {
    method: 'POST',
    headers: { accept: 'application/json', 'x-baton-console': '1' },
  });
  if (!res.ok) return '/';
  return ((await res.json()) as { redirect?: string }).redirect ?? '/';
}
