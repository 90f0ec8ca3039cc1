import { useState } from 'react';
import { api } from '../api';
import { ActionButton, ConfirmDialog } from '../components';
import { CommentField } from './Decision';
import {
  NODE_ACTIONS,
  NodeAction,
  RUN_ACTIONS,
  Run,
  RunAction,
  RunNode,
  whyNotNode,
  whyNotRun,
} from './model';

type Asked = { action: RunAction } | { action: NodeAction; node: string };

const ORDER: readonly RunAction[] = ['retry', 'pause', 'continue', 'cancel'];

/**
 * The run's controls and, through `nodeButtons`, each node's: a confirmation first, then the
 * call; the scheduler's answer (or refusal, as it gave it) is said in a status line.
 */
export function useRunControls(run: Run, onDone: () => Promise<void>) {
  const [asked, setAsked] = useState<Asked | null>(null);
  const [busy, setBusy] = useState(false);
  const [note, setNote] = useState<{ ok: boolean; text: string } | null>(null);
  const [comment, setComment] = useState('');
  const base = `/v1/topology-runs/${encodeURIComponent(run.run_id)}`;

  const act = async (a: Asked): Promise<void> => {
    setAsked(null);
    setBusy(true);
    const what =
      'node' in a ? `${NODE_ACTIONS[a.action].label} ${a.node}` : RUN_ACTIONS[a.action].label;
    const path =
      'node' in a
        ? `${base}/nodes/${encodeURIComponent(a.node)}/${a.action}`
        : `${base}/${a.action}`;
    try {
      const decision = 'node' in a && (a.action === 'approve' || a.action === 'reject');
      await api<Run>(path, {
        method: 'POST',
        body: decision && comment.trim() ? { comment: comment.trim() } : {},
      });
      setComment('');
      setNote({ ok: true, text: `${what}: done.` });
    } catch (err) {
      setNote({ ok: false, text: `${what}: the scheduler refused: ${(err as Error).message}` });
    } finally {
      setBusy(false);
      await onDone();
    }
  };

  const runButtons = (
    <div className="row" role="group" aria-label="Run actions">
      {ORDER.map((a) => (
        <ActionButton
          key={a}
          label={RUN_ACTIONS[a].label}
          reason={whyNotRun(run, a)}
          busy={busy}
          onClick={() => setAsked({ action: a })}
        />
      ))}
    </div>
  );

  const nodeButtons = (n: RunNode) => (
    <div className="row">
      {(n.kind === 'approval'
        ? (['approve', 'reject', 'rerun', 'skip'] as const)
        : (['rerun', 'skip'] as const)
      ).map((a) => (
        <ActionButton
          key={a}
          label={`${NODE_ACTIONS[a].label} ${n.key}`}
          reason={whyNotNode(run, n, a)}
          busy={busy}
          onClick={() => setAsked({ action: a, node: n.key })}
        />
      ))}
    </div>
  );

  /** Approve and Reject of an approval node, for the part of the page that asks for them. */
  const decisionButtons = (n: RunNode) => (
    <div className="row" role="group" aria-label={`Decide node ${n.key}`}>
      {(['approve', 'reject'] as const).map((a) => (
        <ActionButton
          key={a}
          label={`${NODE_ACTIONS[a].label} ${n.key}`}
          reason={whyNotNode(run, n, a)}
          busy={busy}
          onClick={() => setAsked({ action: a, node: n.key })}
        />
      ))}
    </div>
  );

  const noteLine = note ? (
    <p role={note.ok ? 'status' : 'alert'} className={note.ok ? 'report' : 'report error'}>
      {note.text}
    </p>
  ) : null;

  const dialog = asked ? (
    <ConfirmDialog
      title={
        'node' in asked
          ? `${NODE_ACTIONS[asked.action].label} node ${asked.node}?`
          : `${RUN_ACTIONS[asked.action].label}?`
      }
      confirmLabel={
        'node' in asked ? NODE_ACTIONS[asked.action].label : RUN_ACTIONS[asked.action].label
      }
      onConfirm={() => void act(asked)}
      onClose={() => setAsked(null)}
    >
      <p>
        {'node' in asked
          ? `Node ${asked.node} ${NODE_ACTIONS[asked.action].effect}.`
          : `The run ${RUN_ACTIONS[asked.action].effect}.`}
      </p>
      {'node' in asked && (asked.action === 'approve' || asked.action === 'reject') ? (
        <CommentField value={comment} onChange={setComment} />
      ) : null}
    </ConfirmDialog>
  ) : null;

  return { runButtons, nodeButtons, decisionButtons, noteLine, dialog };
}
