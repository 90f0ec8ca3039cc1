import { useQuery, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import { api } from '../api';
import {
  ActionButton,
  ConfirmDialog,
  Empty,
  ErrorState,
  Loading,
  Time,
  useTitle,
} from '../components';
import { Link } from '../router';
import { CommentField } from '../topology/Decision';
import { NODE_ACTIONS, PendingApproval, PendingApprovalPage } from '../topology/model';
import { keys } from '../query-keys';

type Asked = { item: PendingApproval; verdict: 'approve' | 'reject' };

/** Who may decide an approval, in words. */
function approversText(a: PendingApproval): string {
  const { keys: names, roles } = a.approvers;
  if (names.length === 0 && roles.length === 0) return 'any operator or admin';
  return [
    ...(names.length ? [`key ${names.join(', ')}`] : []),
    ...(roles.length ? [`role ${roles.join(', ')}`] : []),
  ].join('; or ');
}

/**
 * Runs waiting for a person's decision, oldest first: what each asks, until when, what its
 * timeout decides, who may decide; Approve and Reject (with a comment) where the key may.
 */
export function Approvals() {
  useTitle('Approvals');
  const client = useQueryClient();
  const list = useQuery({
    queryKey: keys.approvals(),
    queryFn: () => api<PendingApprovalPage>('/v1/topology-approvals'),
    refetchInterval: 5000,
  });
  const [asked, setAsked] = useState<Asked | null>(null);
  const [comment, setComment] = useState('');
  const [busy, setBusy] = useState(false);
  const [note, setNote] = useState<{ ok: boolean; text: string } | null>(null);

  const decide = async ({ item, verdict }: Asked): Promise<void> => {
    setAsked(null);
    setBusy(true);
    const what = `${NODE_ACTIONS[verdict].label} ${item.node} of run ${item.run_id}`;
    try {
      await api(
        `/v1/topology-runs/${encodeURIComponent(item.run_id)}/nodes/${encodeURIComponent(item.node)}/${verdict}`,
        { method: 'POST', body: comment.trim() ? { comment: comment.trim() } : {} },
      );
      setNote({ ok: true, text: `${what}: done.` });
      setComment('');
    } catch (err) {
      setNote({ ok: false, text: `${what}: the scheduler refused: ${(err as Error).message}` });
    } finally {
      setBusy(false);
      await client.invalidateQueries({ queryKey: keys.approvals() });
    }
  };

  return (
    <>
      <h1>Approvals</h1>
      <p className="muted">
        Approval nodes of topology runs waiting for a person, oldest first. Read again every 5 s.
      </p>
      {note ? (
        <p role={note.ok ? 'status' : 'alert'} className={note.ok ? 'report' : 'report error'}>
          {note.text}
        </p>
      ) : null}
      {list.isPending ? (
        <Loading what="the approvals waiting" />
      ) : list.isError ? (
        <ErrorState error={list.error} what="the approvals waiting" />
      ) : list.data.items.length === 0 ? (
        <Empty>Nothing waits for a decision.</Empty>
      ) : (
        <div className="scroll" tabIndex={0} role="region" aria-labelledby="approvals-list-h">
          <h2 id="approvals-list-h" className="visually-hidden">
            Waiting for a decision
          </h2>
          <table className="dense">
            <thead>
              <tr>
                <th scope="col">Run</th>
                <th scope="col">Asks</th>
                <th scope="col">Since</th>
                <th scope="col">Then</th>
                <th scope="col">Who decides</th>
                <th scope="col">Decide</th>
              </tr>
            </thead>
            <tbody>
              {list.data.items.map((a) => {
                const why = a.may_decide ? null : `your key may not: ${approversText(a)} decides`;
                return (
                  <tr key={`${a.run_id}:${a.node}`} data-approval={`${a.run_id}:${a.node}`}>
                    <td>
                      <Link href={`/topology-runs/${encodeURIComponent(a.run_id)}`}>{a.name}</Link>{' '}
                      <span className="muted">node {a.node}</span>
                      <div className="id">{a.run_id}</div>
                    </td>
                    <td>{a.message ?? <span className="muted">a decision</span>}</td>
                    <td>
                      <Time iso={a.requested_at} />
                    </td>
                    <td>
                      {a.on_timeout === 'approve' ? 'approved' : 'rejected'} at{' '}
                      <Time iso={a.timeout_at} /> without a decision
                    </td>
                    <td>{approversText(a)}</td>
                    <td>
                      <div className="row">
                        {(['approve', 'reject'] as const).map((v) => (
                          <ActionButton
                            key={v}
                            label={`${NODE_ACTIONS[v].label} ${a.node}`}
                            reason={why}
                            busy={busy}
                            onClick={() => setAsked({ item: a, verdict: v })}
                          />
                        ))}
                      </div>
                    </td>
                  </tr>
                );
              })}
            </tbody>
          </table>
        </div>
      )}
      {asked ? (
        <ConfirmDialog
          title={`${NODE_ACTIONS[asked.verdict].label} node ${asked.item.node}?`}
          confirmLabel={NODE_ACTIONS[asked.verdict].label}
          onConfirm={() => void decide(asked)}
          onClose={() => setAsked(null)}
        >
          <p>
            Node {asked.item.node} of run {asked.item.run_id} {NODE_ACTIONS[asked.verdict].effect}.
          </p>
          <CommentField value={comment} onChange={setComment} />
        </ConfirmDialog>
      ) : null}
    </>
  );
}
