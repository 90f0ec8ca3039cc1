import { useQuery, useQueryClient } from '@tanstack/react-query';
import { FormEvent, useState } from 'react';
import { api } from '../api';
import { ConfirmDialog, Empty, ErrorState, Field, Loading, Time, useTitle } from '../components';
import { Webhook, WebhookWithSecret } from '../ops-types';
import { Link, useLocation, withQuery } from '../router';
import { WebhookDeliveries } from './WebhookDeliveries';
import { keys } from '../query-keys';

type Event = WebhookWithSecret['events'][number];
const EVENTS: Event[] = [
  'task.finished',
  'task.succeeded',
  'task.failed',
  'task.cancelled',
  'task.timed_out',
  'task.created',
  'task.status_changed',
  'topology.run.finished',
  'topology.run.failed',
  'worker.unhealthy',
];

/** A secret shown once (after a create or a rotation): the page never gets it again. */
function SecretNote({ hook, onClose }: { hook: WebhookWithSecret; onClose: () => void }) {
  return (
    <div className="report" role="status">
      <p>
        <strong>Signing secret of {hook.url}</strong>, shown this once: keep it where the receiver
        verifies <code>webhook-signature</code>.
      </p>
      <p>
        <code className="clip" data-testid="webhook-secret">
          {hook.secret}
        </code>
      </p>
      <button type="button" onClick={onClose}>
        I have kept it
      </button>
    </div>
  );
}

/** A new subscription: where to POST, which events, which task types. */
function WebhookForm({
  onDone,
  onCancel,
}: {
  onDone: (hook: WebhookWithSecret) => void;
  onCancel: () => void;
}) {
  const [url, setUrl] = useState('');
  const [events, setEvents] = useState<Event[]>(['task.finished']);
  const [types, setTypes] = useState('');
  const [description, setDescription] = useState('');
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const submit = async (e: FormEvent): Promise<void> => {
    e.preventDefault();
    setError(null);
    setBusy(true);
    try {
      const task_types = types
        .split(',')
        .map((t) => t.trim())
        .filter(Boolean);
      onDone(
        await api<WebhookWithSecret>('/v1/webhooks', {
          method: 'POST',
          body: { url, events, task_types, description },
        }),
      );
    } catch (err) {
      setError((err as Error).message);
      setBusy(false);
    }
  };
  const toggle = (ev: Event, on: boolean): void =>
    setEvents(on ? [...events, ev] : events.filter((x) => x !== ev));
  return (
    <section className="panel" aria-labelledby="webhook-form">
      <h2 id="webhook-form">New subscription</h2>
      <form className="stack" onSubmit={(e) => void submit(e)}>
        <Field label="URL (http or https)">
          {(id) => (
            <input
              id={id}
              type="url"
              required
              maxLength={2048}
              value={url}
              onChange={(e) => setUrl(e.target.value)}
            />
          )}
        </Field>
        <fieldset>
          <legend>Events</legend>
          <div className="row">
            {EVENTS.map((ev) => (
              <label key={ev} className="check">
                <input
                  type="checkbox"
                  checked={events.includes(ev)}
                  onChange={(e) => toggle(ev, e.target.checked)}
                />{' '}
                {ev}
              </label>
            ))}
          </div>
        </fieldset>
        <Field label="Only these task types (comma-separated; empty: every type)">
          {(id) => <input id={id} value={types} onChange={(e) => setTypes(e.target.value)} />}
        </Field>
        <Field label="Description">
          {(id) => (
            <input
              id={id}
              maxLength={500}
              value={description}
              onChange={(e) => setDescription(e.target.value)}
            />
          )}
        </Field>
        {error ? (
          <p className="error" role="alert">
            {error}
          </p>
        ) : null}
        <div className="row">
          <button type="submit" className="primary" disabled={busy || events.length === 0}>
            Subscribe
          </button>
          <button type="button" onClick={onCancel}>
            Close
          </button>
        </div>
      </form>
    </section>
  );
}

/**
 * Webhook subscriptions: create, enable or disable, rotate the secret, send a test, delete; the
 * delivery log of the one chosen (`?webhook=<id>`), with redelivery.
 */
export function Webhooks() {
  useTitle('Webhooks');
  const client = useQueryClient();
  const loc = useLocation();
  const chosen = loc.query.get('webhook');
  const hooks = useQuery({
    queryKey: keys.webhooks(),
    queryFn: () => api<Webhook[]>('/v1/webhooks'),
    refetchInterval: 10_000,
  });
  const [creating, setCreating] = useState(false);
  const [secret, setSecret] = useState<WebhookWithSecret | null>(null);
  const [deleting, setDeleting] = useState<Webhook | null>(null);
  const [note, setNote] = useState<{ ok: boolean; text: string } | null>(null);

  const call = async (w: Webhook, method: string, path: string, body: unknown, done: string) => {
    try {
      const answer = await api<unknown>(`/v1/webhooks/${encodeURIComponent(w.webhook_id)}${path}`, {
        method,
        body,
      });
      setNote({ ok: true, text: `${w.url}: ${done}.` });
      await client.invalidateQueries({ queryKey: keys.webhooks() });
      await client.invalidateQueries({ queryKey: keys.deliveries(w.webhook_id) });
      return answer;
    } catch (err) {
      setNote({ ok: false, text: `${w.url}: ${(err as Error).message}` });
      return undefined;
    }
  };

  const rotate = async (w: Webhook): Promise<void> => {
    const made = (await call(w, 'POST', '/rotate-secret', {}, 'new secret made')) as
      WebhookWithSecret | undefined;
    if (made) setSecret(made);
  };

  return (
    <>
      <div className="title-row">
        <h1>Webhooks</h1>
        {creating ? null : (
          <button type="button" className="primary" onClick={() => setCreating(true)}>
            New subscription
          </button>
        )}
      </div>
      {note ? (
        <p role="status" className={note.ok ? undefined : 'error'}>
          {note.text}
        </p>
      ) : null}
      {secret ? <SecretNote hook={secret} onClose={() => setSecret(null)} /> : null}
      {creating ? (
        <WebhookForm
          onDone={(hook) => {
            setCreating(false);
            setSecret(hook);
            setNote({ ok: true, text: `${hook.url}: subscribed.` });
            void client.invalidateQueries({ queryKey: keys.webhooks() });
          }}
          onCancel={() => setCreating(false)}
        />
      ) : null}
      {hooks.isPending ? (
        <Loading what="webhook subscriptions" />
      ) : hooks.isError ? (
        <ErrorState error={hooks.error} what="webhook subscriptions" />
      ) : hooks.data.length === 0 ? (
        <Empty>
          No subscriptions. A subscription POSTs task events to a URL, signed: make one with{' '}
          <strong>New subscription</strong>.
        </Empty>
      ) : (
        <div className="scroll" tabIndex={0} role="region" aria-label="Subscriptions">
          <table className="dense">
            <thead>
              <tr>
                <th scope="col">URL</th>
                <th scope="col">Events</th>
                <th scope="col">State</th>
                <th scope="col">Created</th>
                <th scope="col">Actions</th>
              </tr>
            </thead>
            <tbody>
              {hooks.data.map((w) => (
                <tr key={w.webhook_id} className={w.webhook_id === chosen ? 'selected' : undefined}>
                  <td className="wrap">
                    {w.url}
                    <div className="id">
                      {w.webhook_id}
                      {w.tenant ? ` · tenant ${w.tenant}` : ''}
                      {w.description ? ` · ${w.description}` : ''}
                    </div>
                  </td>
                  <td className="wrap">
                    {w.events.join(', ')}
                    {w.task_types.length ? (
                      <div className="muted">types: {w.task_types.join(', ')}</div>
                    ) : null}
                  </td>
                  <td>
                    <span className={`badge ${w.enabled ? 'status-success' : 'status-pause'}`}>
                      {w.enabled ? 'enabled' : 'disabled'}
                    </span>
                    {w.disabled_reason ? <div className="muted">{w.disabled_reason}</div> : null}
                    {w.failing_since ? (
                      <div className="error">
                        failing since <Time iso={w.failing_since} />
                      </div>
                    ) : null}
                  </td>
                  <td>
                    <Time iso={w.created_at} />
                  </td>
                  <td className="actions">
                    <div className="row">
                      <Link href={withQuery(loc, { webhook: w.webhook_id, before: undefined })}>
                        Deliveries<span className="visually-hidden"> of {w.url}</span>
                      </Link>
                      <button
                        type="button"
                        onClick={() =>
                          void call(
                            w,
                            'PATCH',
                            '',
                            { enabled: !w.enabled },
                            w.enabled ? 'disabled' : 'enabled',
                          )
                        }
                      >
                        {w.enabled ? 'Disable' : 'Enable'}
                        <span className="visually-hidden"> {w.url}</span>
                      </button>
                      <button
                        type="button"
                        onClick={() => void call(w, 'POST', '/test', {}, 'test message sent')}
                      >
                        Send test<span className="visually-hidden"> to {w.url}</span>
                      </button>
                      <button type="button" onClick={() => void rotate(w)}>
                        Rotate secret<span className="visually-hidden"> of {w.url}</span>
                      </button>
                      <button type="button" onClick={() => setDeleting(w)}>
                        Delete<span className="visually-hidden"> {w.url}</span>
                      </button>
                    </div>
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
      {chosen && hooks.data?.some((w) => w.webhook_id === chosen) ? (
        <WebhookDeliveries webhookId={chosen} />
      ) : null}
      {deleting ? (
        <ConfirmDialog
          title={`Delete the subscription to ${deleting.url}?`}
          confirmLabel="Delete"
          onConfirm={() => {
            const w = deleting;
            setDeleting(null);
            void call(w, 'DELETE', '', undefined, 'deleted');
          }}
          onClose={() => setDeleting(null)}
        >
          <p>Its delivery log goes with it, and messages not yet sent are not sent.</p>
        </ConfirmDialog>
      ) : null}
    </>
  );
}
