import { Time } from '../components';
import { HistoryEntry, NodeStatus, statusClass, statusLabel } from './model';

/** What an execution's outcome looks like as a node status (its colour and words). */
const AS_NODE: Record<string, NodeStatus> = {
  SUCCESS: 'SUCCESS',
  FAIL: 'FAILED',
  RUNNING: 'ACTIVE',
  CANCELLED: 'CANCELLED',
  ROLLBACK: 'ROLLED_BACK',
};
const asNode = (e: HistoryEntry): NodeStatus =>
  e.kind === 'execution' ? (AS_NODE[e.status] ?? 'ACTIVE') : (e.status as NodeStatus);

/** A node's lane: its key, with the element of a for_each node. */
const laneOf = (e: HistoryEntry): string =>
  e.item !== null && e.item > 0 ? `${e.node}[${e.item}]` : (e.node ?? '');

const PHASE: Record<string, string> = { handler: 'handler', finally: 'finally' };

/** One entry in words, as the list under the bars says it. */
export function entryText(e: HistoryEntry): string {
  const who = e.actor ? ` by ${e.actor}` : '';
  switch (e.kind) {
    case 'run':
      return `run ${e.status}${e.reason ? `: ${e.reason}` : ''}${who}`;
    case 'repair':
      return e.node ? `${e.status} of node ${e.node}${who}` : `${e.status} of the run${who}`;
    case 'execution':
      return `node ${laneOf(e)}${e.phase && PHASE[e.phase] ? ` (${PHASE[e.phase]})` : ''} attempt ${e.attempt ?? 1}: ${statusLabel(asNode(e))}${e.error ? ` (${e.error})` : ''}${e.current ? '' : ', replaced since'}`;
    default:
      return `node ${laneOf(e)}: ${statusLabel(asNode(e))}${e.reason ? ` (${e.reason})` : ''}${e.error && e.error !== e.reason ? ` (${e.error})` : ''}${who}${e.current ? '' : ', replaced since'}`;
  }
}

/**
 * A run's history as a timeline: a lane per node with a bar per attempt of its task (retries,
 * re-runs and handler runs side by side, a replaced one drawn faded) and a mark per decision;
 * the repairs people made as marks of their own. Each bar and mark says in words what it is, and
 * the list below tells every entry in order.
 */
export function RunTimeline({ entries, now }: { entries: HistoryEntry[]; now: number }) {
  const nodeEntries = entries.filter((e) => e.kind === 'execution' || e.kind === 'decision');
  if (entries.length === 0) return <p className="muted">Nothing has happened yet.</p>;
  const times = entries.flatMap((e) => [
    Date.parse(e.at),
    e.ended_at
      ? Date.parse(e.ended_at)
      : e.kind === 'execution' && e.status === 'RUNNING'
        ? now
        : Date.parse(e.at),
  ]);
  const t0 = Math.min(...times);
  const span = Math.max(1, Math.max(...times) - t0);
  // The last 15% of the width is left for the words of what ended last.
  const pct = (t: number): number => ((t - t0) / span) * 85;
  const lanes = [...new Set(nodeEntries.map(laneOf))];
  const repairs = entries.filter((e) => e.kind === 'repair');
  const bar = (e: HistoryEntry, i: number) => {
    const from = Date.parse(e.at);
    const to = e.ended_at ? Date.parse(e.ended_at) : e.status === 'RUNNING' ? now : from;
    const status = asNode(e);
    const words =
      e.kind === 'execution'
        ? `attempt ${e.attempt ?? 1} · ${statusLabel(status)}${e.current ? '' : ' (replaced)'}`
        : `${statusLabel(status)}${e.current ? '' : ' (replaced)'}`;
    return (
      <span
        key={i}
        className={`tl-${e.kind === 'execution' ? 'bar' : 'mark'} ${statusClass(status)}${e.current ? '' : ' tl-replaced'}`}
        style={{
          left: `${pct(from)}%`,
          ...(e.kind === 'execution' ? { width: `${Math.max(pct(to) - pct(from), 1)}%` } : {}),
        }}
        title={entryText(e)}
        data-entry={`${laneOf(e)}:${e.kind}:${e.attempt ?? ''}`}
      >
        <span className="tl-words">{words}</span>
      </span>
    );
  };
  return (
    <>
      <div className="scroll" tabIndex={0} role="region" aria-labelledby="timeline-h">
        <table className="timeline">
          <caption className="visually-hidden">
            From <Time iso={new Date(t0).toISOString()} /> to{' '}
            <Time iso={new Date(t0 + span).toISOString()} />
          </caption>
          <thead>
            <tr>
              <th scope="col">Node</th>
              <th scope="col">Attempts and decisions, in time</th>
            </tr>
          </thead>
          <tbody>
            {lanes.map((lane) => (
              <tr key={lane} data-lane={lane}>
                <th scope="row">{lane}</th>
                <td>
                  <div className="tl-lane">
                    {nodeEntries.map((e, i) => (laneOf(e) === lane ? bar(e, i) : null))}
                  </div>
                </td>
              </tr>
            ))}
            {repairs.length ? (
              <tr data-lane="repairs">
                <th scope="row">repairs</th>
                <td>
                  <div className="tl-lane">
                    {repairs.map((e, i) => (
                      <span
                        key={i}
                        className="tl-mark tl-repair"
                        style={{ left: `${pct(Date.parse(e.at))}%` }}
                        title={entryText(e)}
                      >
                        <span className="tl-words">
                          {e.status}
                          {e.node ? ` ${e.node}` : ''}
                        </span>
                      </span>
                    ))}
                  </div>
                </td>
              </tr>
            ) : null}
          </tbody>
        </table>
      </div>
      <details className="tl-list">
        <summary>Every entry, in order ({entries.length})</summary>
        <ol>
          {entries.map((e, i) => (
            <li key={i}>
              <Time iso={e.at} /> {entryText(e)}
            </li>
          ))}
        </ol>
      </details>
    </>
  );
}
