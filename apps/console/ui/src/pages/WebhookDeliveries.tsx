import { useQuery, useQueryClient } from '@tanstack/react-query';
import { FormEvent, useState } from 'react';
import { api, queryString } from '../api';
import { Empty, ErrorState, Field, JsonBlock, Loading, Time } from '../components';
import { Link, navigate, useLocation, withQuery } from '../router';
import { Delivery } from '../types';
import { keys } from '../query-keys';

const PAGE = 20;
const DAY_MS = 86_400_000;

/** A `datetime-local` value (the browser's zone) for an instant. */
const localInput = (ms: number): string =>
  new Date(ms - new Date(ms).getTimezoneOffset() * 60_000).toISOString().slice(0, 16);

/** What the receiver last answered, in a few words. */
function lastAnswer(d: Delivery): string {
  const a = d.attempt_log[d.attempt_log.length - 1];
  if (!a) return 'not tried yet';
  if (a.status_code !== null) return `HTTP ${a.status_code}`;
  return a.error ?? 'no answer';
}

/**
 * A subscription's delivery log, newest first, a page at a time (`before` in the address), with
 * each message's attempts; send one again, or every failed one since a time.
 */
export function WebhookDeliveries({ webhookId }: { webhookId: string }) {
  const client = useQueryClient();
  const loc = useLocation();
  const before = loc.query.get('before') ?? undefined;
  const status = loc.query.get('dstatus') ?? undefined;
  const deliveries = useQuery({
    queryKey: keys.deliveries(webhookId, before, status),
    queryFn: () =>
      api<Delivery[]>(
        `/v1/webhooks/${encodeURIComponent(webhookId)}/deliveries${queryString({ limit: PAGE + 1, before, status })}`,
      ),
    refetchInterval: 3000,
  });
  const [since, setSince] = useState(() => localInput(Date.now() - DAY_MS));
  const [note, setNote] = useState<{ ok: boolean; text: string } | null>(null);

  const redeliver = async (path: string, body: unknown, what: string): Promise<void> => {
    try {
      const { redelivered } = await api<{ redelivered: number }>(
        `/v1/webhooks/${encodeURIComponent(webhookId)}${path}`,
        { method: 'POST', body },
      );
      setNote({ ok: true, text: `${what}: ${redelivered} message(s) to be sent again.` });
    } catch (err) {
      setNote({ ok: false, text: `${what}: ${(err as Error).message}` });
    }
    await client.invalidateQueries({ queryKey: keys.deliveries(webhookId) });
  };

  const redeliverFailed = (e: FormEvent): void => {
    e.preventDefault();
    void redeliver('/redeliver', { since: new Date(since).toISOString() }, 'Redeliver failed');
  };

  const shown = deliveries.data?.slice(0, PAGE) ?? [];
  const more = (deliveries.data?.length ?? 0) > PAGE;
  return (
    <section aria-labelledby="deliveries">
      <h2 id="deliveries">Delivery log</h2>
      <div className="filters">
        <Field label="Delivery status">
          {(id) => (
            <select
              id={id}
              value={status ?? ''}
              onChange={(e) =>
                navigate(withQuery(loc, { dstatus: e.target.value, before: undefined }))
              }
            >
              <option value="">any</option>
              <option value="pending">pending</option>
              <option value="delivered">delivered</option>
              <option value="failed">failed</option>
            </select>
          )}
        </Field>
        <form className="row" onSubmit={redeliverFailed}>
          <Field label="Failed since (your time)">
            {(id) => (
              <input
                id={id}
                type="datetime-local"
                required
                value={since}
                onChange={(e) => setSince(e.target.value)}
              />
            )}
          </Field>
          <button type="submit">Redeliver failed</button>
        </form>
      </div>
      {note ? (
        <p role="status" className={note.ok ? undefined : 'error'}>
          {note.text}
        </p>
      ) : null}
      {deliveries.isPending ? (
        <Loading what="deliveries" />
      ) : deliveries.isError ? (
        <ErrorState error={deliveries.error} what="deliveries" />
      ) : shown.length === 0 ? (
        <Empty>
          {before ? 'No older deliveries.' : 'No deliveries yet: send a test to see one here.'}
        </Empty>
      ) : (
        <div className="scroll" tabIndex={0} role="region" aria-label="Deliveries">
          <table className="dense">
            <thead>
              <tr>
                <th scope="col">Created</th>
                <th scope="col">Event</th>
                <th scope="col">Task</th>
                <th scope="col">Status</th>
                <th scope="col" className="num">
                  Attempts
                </th>
                <th scope="col">Last answer</th>
                <th scope="col">Actions</th>
              </tr>
            </thead>
            <tbody>
              {shown.map((d) => (
                <tr key={d.message_id} data-message={d.message_id}>
                  <td>
                    <Time iso={d.created_at} />
                    <div className="id">{d.message_id}</div>
                  </td>
                  <td>{d.event_type}</td>
                  <td>{d.task_id ? <Link href={`/tasks/${d.task_id}`}>{d.task_id}</Link> : '—'}</td>
                  <td>
                    <span className={`badge delivery-${d.status}`}>{d.status}</span>
                  </td>
                  <td className="num">{d.attempts}</td>
                  <td className="wrap">
                    {lastAnswer(d)}
                    {d.attempt_log.length ? (
                      <JsonBlock label={`Attempts of ${d.message_id}`} value={d.attempt_log} />
                    ) : null}
                  </td>
                  <td>
                    <button
                      type="button"
                      onClick={() =>
                        void redeliver(
                          `/deliveries/${encodeURIComponent(d.message_id)}/redeliver`,
                          {},
                          `Redeliver ${d.message_id}`,
                        )
                      }
                    >
                      Redeliver<span className="visually-hidden"> {d.message_id}</span>
                    </button>
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
      <nav className="pager" aria-label="Delivery pages">
        {before ? (
          <Link href={withQuery(loc, { before: undefined })}>Newest deliveries</Link>
        ) : null}
        {more ? (
          <Link href={withQuery(loc, { before: shown[shown.length - 1].message_id })}>
            Older deliveries
          </Link>
        ) : null}
      </nav>
    </section>
  );
}
