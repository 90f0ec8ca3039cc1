import { useId } from 'react';
import { Link } from '../router';
import { OUTCOMES, Outcome, TaskHistory, hhmm } from '../ops-types';

const MINUTE = 60_000;

/** Each outcome's colour (AA against white) and words. */
const LOOK: Record<Outcome, { colour: string; label: string }> = {
  SUCCESS: { colour: '#116329', label: 'succeeded' },
  FAIL: { colour: '#a40e26', label: 'failed' },
  ROLLBACK: { colour: '#8250df', label: 'rolled back' },
  CANCELLED: { colour: '#7d4e00', label: 'cancelled' },
};

type Minute = { at: number } & Record<Outcome, number>;

/** One entry per minute of the window, oldest first, for one task type or all. */
function minutesOf(history: TaskHistory, taskType: string): Minute[] {
  const from = Date.parse(history.from);
  const out: Minute[] = Array.from({ length: history.minutes }, (_, i) => ({
    at: from + i * MINUTE,
    SUCCESS: 0,
    FAIL: 0,
    ROLLBACK: 0,
    CANCELLED: 0,
  }));
  for (const b of history.buckets) {
    if (taskType && b.task_type !== taskType) continue;
    const i = Math.round((Date.parse(b.minute) - from) / MINUTE);
    if (out[i] && b.outcome in LOOK) out[i][b.outcome as Outcome] += b.count;
  }
  return out;
}

const total = (m: Minute): number => OUTCOMES.reduce((n, o) => n + m[o], 0);

/**
 * Tasks finished per minute as stacked bars by outcome (an SVG that scales with the page), with
 * the same numbers as a table below it for screen readers and for reading exact values.
 */
export function Throughput({ history, taskType }: { history: TaskHistory; taskType: string }) {
  const titleId = useId();
  const descId = useId();
  const minutes = minutesOf(history, taskType);
  const sums = Object.fromEntries(
    OUTCOMES.map((o) => [o, minutes.reduce((n, m) => n + m[o], 0)]),
  ) as Record<Outcome, number>;
  const all = OUTCOMES.reduce((n, o) => n + sums[o], 0);
  const peak = Math.max(1, ...minutes.map(total));
  const W = 600;
  const H = 160;
  const left = 30;
  const bottom = 20;
  const plotH = H - bottom - 6;
  const step = (W - left) / minutes.length;
  const y = (n: number): number => H - bottom - (n / peak) * plotH;
  const ticks = [0, Math.ceil(peak / 2), peak].filter((v, i, a) => a.indexOf(v) === i);
  const what = taskType ? `${taskType} tasks` : 'tasks';
  const summary =
    `${all} ${what} finished in the last ${history.minutes} minutes: ` +
    OUTCOMES.map((o) => `${sums[o]} ${LOOK[o].label}`).join(', ') +
    `; the busiest minute had ${all ? peak : 0}.`;
  const busy = minutes.filter((m) => total(m) > 0);
  return (
    <figure className="chart">
      <svg viewBox={`0 0 ${W} ${H}`} role="img" aria-labelledby={titleId} aria-describedby={descId}>
        <title id={titleId}>Tasks finished per minute, by outcome</title>
        <desc id={descId}>{summary}</desc>
        {ticks.map((t) => (
          <g key={t} aria-hidden="true">
            <line x1={left} x2={W} y1={y(t)} y2={y(t)} className="grid" />
            <text x={left - 4} y={y(t) + 4} textAnchor="end" className="axis">
              {t}
            </text>
          </g>
        ))}
        {minutes.map((m, i) => {
          let base = 0;
          const n = total(m);
          return (
            <g key={m.at} data-minute={new Date(m.at).toISOString()} data-total={n}>
              {n > 0 ? (
                <title>
                  {`${hhmm(m.at)} (${new Date(m.at).toISOString().slice(11, 16)} UTC): ` +
                    OUTCOMES.filter((o) => m[o] > 0)
                      .map((o) => `${m[o]} ${LOOK[o].label}`)
                      .join(', ')}
                </title>
              ) : null}
              {OUTCOMES.map((o) => {
                if (m[o] === 0) return null;
                const top = y(base + m[o]);
                const height = y(base) - top;
                base += m[o];
                return (
                  <rect
                    key={o}
                    x={left + i * step + 0.5}
                    y={top}
                    width={Math.max(1, step - 1)}
                    height={height}
                    fill={LOOK[o].colour}
                  />
                );
              })}
              {i % 15 === 0 || i === minutes.length - 1 ? (
                <text
                  x={left + i * step + step / 2}
                  y={H - 5}
                  textAnchor="middle"
                  className="axis"
                  aria-hidden="true"
                >
                  {hhmm(m.at)}
                </text>
              ) : null}
            </g>
          );
        })}
      </svg>
      <figcaption>
        <ul className="legend">
          {OUTCOMES.map((o) => (
            <li key={o}>
              <span className="swatch" style={{ background: LOOK[o].colour }} aria-hidden="true" />
              {o === 'SUCCESS' ? (
                <>
                  {LOOK[o].label} {sums[o]}
                </>
              ) : (
                <Link href={`/tasks?outcome=${o}${taskType ? `&task_type=${taskType}` : ''}`}>
                  {LOOK[o].label} {sums[o]}
                </Link>
              )}
            </li>
          ))}
        </ul>
        <p className="muted">{summary}</p>
      </figcaption>
      <details>
        <summary>The minutes as a table ({busy.length} with tasks finished)</summary>
        {busy.length === 0 ? (
          <p className="muted">No task finished in these minutes.</p>
        ) : (
          <div className="scroll" tabIndex={0} role="region" aria-label="Finished per minute">
            <table className="dense">
              <thead>
                <tr>
                  <th scope="col">Minute</th>
                  {OUTCOMES.map((o) => (
                    <th scope="col" className="num" key={o}>
                      {LOOK[o].label}
                    </th>
                  ))}
                </tr>
              </thead>
              <tbody>
                {busy.map((m) => (
                  <tr key={m.at}>
                    <th scope="row">
                      <time
                        dateTime={new Date(m.at).toISOString()}
                        title={new Date(m.at).toISOString().replace('T', ' ').slice(0, 16) + ' UTC'}
                      >
                        {hhmm(m.at)}
                      </time>
                    </th>
                    {OUTCOMES.map((o) => (
                      <td className="num" key={o}>
                        {m[o]}
                      </td>
                    ))}
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        )}
      </details>
    </figure>
  );
}
