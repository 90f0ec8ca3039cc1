import { PlaceholderMissing, placeholderPaths, render } from '../placeholders';
import { KEY, bad, isObject } from './checks';
import { WaitNode } from './node-def';
import { NodeKindSpec } from './node-kind';

const MAX_WAIT_SECONDS = 30 * 24 * 3600;
/** A time as RFC 3339 writes it (years 0000-9999, a zone): `2026-12-01T02:00:00Z`. */
const RFC3339 = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,9})?(Z|[+-]\d{2}:\d{2})$/i;

/** The instant of an RFC 3339 time, or NaN. */
const instant = (text: string): number => (RFC3339.test(text) ? Date.parse(text) : NaN);

/** A wait: for a signal, until a time (maybe a placeholder), or a number of seconds. */
export const waitKind: NodeKindSpec<WaitNode> = {
  kind: 'wait',
  fields: ['wait'],
  present: (raw) => raw.wait !== undefined,
  parse(raw, base) {
    const w = raw.wait;
    const key = base.key;
    if (!isObject(w)) throw bad('wait must be {signal}, {until} or {seconds}', key);
    const set = ['signal', 'until', 'seconds'].filter((k) => w[k] !== undefined);
    if (set.length !== 1) throw bad('wait has exactly one of signal, until and seconds', key);
    if (w.signal !== undefined && (typeof w.signal !== 'string' || !KEY.test(w.signal)))
      throw bad('wait.signal must be a name of letters, digits, "_" and "-"', key);
    if (
      w.until !== undefined &&
      (typeof w.until !== 'string' ||
        (placeholderPaths(w.until).length === 0 && Number.isNaN(instant(w.until))))
    )
      throw bad(
        'wait.until must be an RFC 3339 time with its zone (2026-12-01T02:00:00Z) or a placeholder that gives one',
        key,
      );
    if (
      w.seconds !== undefined &&
      (typeof w.seconds !== 'number' || !(w.seconds >= 0 && w.seconds <= MAX_WAIT_SECONDS))
    )
      throw bad(`wait.seconds must be a number from 0 to ${MAX_WAIT_SECONDS}`, key);
    return { ...base, wait: w as WaitNode['wait'] };
  },
  templates: (n) => [n.wait],
  start(n, _v, e) {
    const w = n.wait;
    if (w.signal !== undefined) {
      e.record(n, 0, 'waiting', { signal: w.signal });
      e.set(n.key, 'ACTIVE');
      return;
    }
    const until =
      w.seconds !== undefined
        ? e.run.now + w.seconds * 1000
        : instant(String(render(w.until as string, e.scope())));
    if (Number.isNaN(until))
      throw new PlaceholderMissing(`wait.until ${w.until} does not give an RFC 3339 time`);
    // As long as wait.seconds may wait at most.
    if (until > e.run.now + MAX_WAIT_SECONDS * 1000)
      throw new PlaceholderMissing(
        `wait.until ${new Date(until).toISOString()} is more than ${MAX_WAIT_SECONDS / 86_400} days away`,
      );
    e.record(n, 0, 'waiting', { until });
    e.set(n.key, 'ACTIVE');
    e.setView(n.key, {
      ...e.view(n.key),
      row: {
        key: n.key,
        item: 0,
        state: 'waiting',
        taskId: null,
        result: { until },
        createdAt: 0,
        updatedAt: 0,
      },
    });
  },
  advance(n, v, e) {
    if (v.row?.state !== 'waiting' || typeof v.row.result?.until !== 'number') return;
    const until = v.row.result.until;
    if (until <= e.run.now) {
      const done = { waited_until: new Date(until).toISOString() };
      e.record(n, 0, 'done', done);
      e.set(n.key, 'SUCCESS', done);
    } else e.plan.wakeAt = Math.min(e.plan.wakeAt ?? Infinity, until);
  },
};
