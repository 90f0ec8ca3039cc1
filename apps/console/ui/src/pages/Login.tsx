import { FormEvent, useEffect, useState } from 'react';
import { ApiError, api, apiKey, singleSignOn } from '../api';
import { useTitle } from '../components';

/**
 * The way in: single sign-on at the company's identity provider when the console has it, and an
 * API key (the scheduler's `Authorization: Bearer` key, made with POST /v1/api-keys or printed at
 * the first start), checked with one read and kept for this tab only.
 */
export function Login({ onKey }: { onKey: (key: string) => void }) {
  useTitle('Sign in');
  const [key, setKey] = useState('');
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const [sso, setSso] = useState(false);
  useEffect(() => {
    void singleSignOn().then(setSso);
  }, []);

  const submit = async (e: FormEvent): Promise<void> => {
    e.preventDefault();
    const trimmed = key.trim();
    if (!trimmed) {
      setError('Paste an API key first.');
      return;
    }
    setBusy(true);
    setError(null);
    try {
      await api('/v1/task-types', { key: trimmed });
      apiKey.set(trimmed);
      onKey(trimmed);
    } catch (err) {
      setError(
        err instanceof ApiError && err.status === 401
          ? 'The scheduler refused this key (unknown, revoked or expired).'
          : `Could not check the key: ${(err as Error).message}`,
      );
    } finally {
      setBusy(false);
    }
  };

  return (
    <main id="main" className="login">
      <h1>Baton console</h1>
      {sso ? (
        <p>
          <a
            className="button primary"
            href={`/auth/login?return=${encodeURIComponent(window.location.pathname + window.location.search)}`}
          >
            Sign in with your company account
          </a>
        </p>
      ) : null}
      <form onSubmit={(e) => void submit(e)} aria-describedby="key-help">
        <label htmlFor="api-key">API key</label>
        <input
          id="api-key"
          name="api-key"
          type="password"
          autoComplete="off"
          spellCheck={false}
          value={key}
          onChange={(e) => setKey(e.target.value)}
          aria-invalid={error !== null}
          aria-describedby={error ? 'key-error' : undefined}
        />
        <p id="key-help" className="muted">
          A key of the scheduler&apos;s API (<code>baton_…</code>). The console sends it with each
          request and keeps it in this tab only; closing the tab forgets it. What you may see and do
          is what the key&apos;s role allows.
        </p>
        {error ? (
          <p id="key-error" className="error" role="alert">
            {error}
          </p>
        ) : null}
        <button type="submit" className="primary" disabled={busy}>
          {busy ? 'Checking…' : 'Open the console'}
        </button>
      </form>
    </main>
  );
}
