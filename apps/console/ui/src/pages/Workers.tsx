import { useQuery, useQueryClient } from '@tanstack/react-query';
import { FormEvent, useState } from 'react';
import { api } from '../api';
import { ConfirmDialog, Empty, ErrorState, Field, Loading, Time, useTitle } from '../components';
import { Worker } from '../types';
import { keys } from '../query-keys';

/** The fleet: versions, load, health, drains and blacklists, and what may be changed of them. */
export function Workers() {
  useTitle('Workers');
  const client = useQueryClient();
  const workers = useQuery({
    queryKey: keys.workers(),
    queryFn: () => api<Worker[]>('/v1/workers'),
    refetchInterval: 5000,
  });
  const [blacklisting, setBlacklisting] = useState<Worker | null>(null);
  const [draining, setDraining] = useState<Worker | null>(null);
  const [reason, setReason] = useState('');
  const [until, setUntil] = useState('');
  const [note, setNote] = useState<{ ok: boolean; text: string } | null>(null);

  const call = async (w: Worker, method: string, path: string, body?: unknown, done?: string) => {
    try {
      await api(`/v1/workers/${encodeURIComponent(w.worker_id)}/${path}`, { method, body });
      setNote({ ok: true, text: `${w.worker_id}: ${done}.` });
    } catch (err) {
      setNote({ ok: false, text: `${w.worker_id}: ${(err as Error).message}` });
    }
    await client.invalidateQueries({ queryKey: keys.workers() });
  };

  const blacklist = (e?: FormEvent): void => {
    e?.preventDefault();
    const w = blacklisting;
    if (!w || !reason.trim()) return;
    setBlacklisting(null);
    // The field is local time; the API takes an instant.
    const end = until ? new Date(until).toISOString() : undefined;
    void call(
      w,
      'POST',
      'blacklist',
      { reason: reason.trim(), ...(end ? { until: end } : {}) },
      end ? `blacklisted until ${new Date(end).toLocaleString()}` : 'blacklisted until lifted',
    );
    setReason('');
    setUntil('');
  };

  /** The task types no other healthy worker (not draining, not blacklisted) serves but `w`. */
  const onlyServedBy = (w: Worker): string[] =>
    w.task_types.filter(
      (t) =>
        !(workers.data ?? []).some(
          (o) =>
            o.worker_id !== w.worker_id &&
            o.health === 'healthy' &&
            !o.draining &&
            !o.blacklist &&
            o.task_types.includes(t),
        ),
    );

  return (
    <>
      <h1>Workers</h1>
      {note ? (
        <p role="status" className={note.ok ? undefined : 'error'}>
          {note.text}
        </p>
      ) : null}
      {workers.isPending ? (
        <Loading what="workers" />
      ) : workers.isError ? (
        <ErrorState error={workers.error} what="workers" />
      ) : workers.data.length === 0 ? (
        <Empty>No worker is registered. A worker registers itself when it starts.</Empty>
      ) : (
        <div className="scroll" tabIndex={0} role="region" aria-label="Worker list">
          <table className="dense">
            <thead>
              <tr>
                <th scope="col">Worker</th>
                <th scope="col">Version</th>
                <th scope="col">Types</th>
                <th scope="col" className="num">
                  Load
                </th>
                <th scope="col">Health</th>
                <th scope="col">Heartbeat</th>
                <th scope="col">Drain, blacklist</th>
                <th scope="col">Actions</th>
              </tr>
            </thead>
            <tbody>
              {workers.data.map((w) => (
                <tr key={w.worker_id}>
                  <td>
                    {w.worker_id}
                    <div className="id">{w.url}</div>
                  </td>
                  <td>
                    {w.version}
                    <div className="id" title="the worker contract it speaks">
                      contract {w.contract_version}
                    </div>
                  </td>
                  <td>
                    {w.task_types.map((t) => (
                      <div key={t} title={w.excluded[t] ?? 'takes new tasks of this type'}>
                        {t}
                        {w.excluded[t] ? <span className="muted"> (left out)</span> : null}
                      </div>
                    ))}
                  </td>
                  <td className="num">
                    {w.inflight} / {w.capacity}
                  </td>
                  <td>
                    <span className={`badge health-${w.health}`}>{w.health}</span>
                    {w.consecutive_failures ? (
                      <div className="muted">{w.consecutive_failures} failed calls</div>
                    ) : null}
                  </td>
                  <td>
                    <Time iso={w.last_heartbeat_at} />
                  </td>
                  <td>
                    {w.draining ? (
                      <div>
                        draining since <Time iso={w.draining_since} />
                      </div>
                    ) : null}
                    {w.blacklist ? (
                      <div>
                        blacklisted: {w.blacklist.reason}
                        {w.blacklist.until ? (
                          <>
                            {' '}
                            until <Time iso={w.blacklist.until} />
                          </>
                        ) : null}
                      </div>
                    ) : null}
                    {!w.draining && !w.blacklist ? <span className="muted">—</span> : null}
                  </td>
                  <td>
                    <div className="row">
                      {w.draining ? (
                        <button
                          type="button"
                          onClick={() => void call(w, 'DELETE', 'drain', undefined, 'drain ended')}
                        >
                          Undrain
                        </button>
                      ) : (
                        <button type="button" onClick={() => setDraining(w)}>
                          Drain…
                        </button>
                      )}
                      {w.blacklist ? (
                        <button
                          type="button"
                          onClick={() =>
                            void call(w, 'DELETE', 'blacklist', undefined, 'blacklist lifted')
                          }
                        >
                          Lift blacklist
                        </button>
                      ) : (
                        <button type="button" onClick={() => setBlacklisting(w)}>
                          Blacklist…
                        </button>
                      )}
                    </div>
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
      {draining ? (
        <ConfirmDialog
          title={`Drain ${draining.worker_id}?`}
          confirmLabel="Drain"
          onConfirm={() => {
            const w = draining;
            setDraining(null);
            void call(w, 'POST', 'drain', {}, 'draining: it takes no new tasks');
          }}
          onClose={() => setDraining(null)}
        >
          <p>
            It will take no new tasks; the {draining.inflight} it runs now finish there. Undrain
            gives it work again.
          </p>
          {onlyServedBy(draining).length > 0 ? (
            <p className="error">
              No other healthy worker serves {onlyServedBy(draining).join(', ')}: new tasks of{' '}
              {onlyServedBy(draining).length === 1 ? 'that type' : 'those types'} will wait until a
              worker that serves them is back.
            </p>
          ) : null}
        </ConfirmDialog>
      ) : null}
      {blacklisting ? (
        <ConfirmDialog
          title={`Blacklist ${blacklisting.worker_id}?`}
          confirmLabel="Blacklist"
          onConfirm={() => blacklist()}
          onClose={() => setBlacklisting(null)}
        >
          <form onSubmit={blacklist}>
            <Field label="Reason (kept with the blacklist)">
              {(id) => (
                <input
                  id={id}
                  required
                  maxLength={500}
                  value={reason}
                  onChange={(e) => setReason(e.target.value)}
                />
              )}
            </Field>
            <Field label="Until (optional; empty: until lifted by hand)">
              {(id) => (
                <input
                  id={id}
                  type="datetime-local"
                  value={until}
                  onChange={(e) => setUntil(e.target.value)}
                />
              )}
            </Field>
          </form>
          <p>
            No new tasks go to it {until ? 'until then' : 'until the blacklist is lifted'}; the
            tasks it has finish there.
          </p>
        </ConfirmDialog>
      ) : null}
    </>
  );
}
