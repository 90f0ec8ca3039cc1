import { useEffect, useRef, useState } from 'react';
import { api } from '../api';
import { Empty, ErrorState } from '../components';
import { AttemptLogPage } from '../types';

type Line = AttemptLogPage['items'][number];
const LEVELS = ['debug', 'info', 'warn', 'error'] as const;
/** Lines kept on the page at most (the newest); the download has them all. */
const SHOWN = 5000;

const logPath = (taskId: string, attempt: number, after: number, level: string, q: string) =>
  `/v1/tasks/${encodeURIComponent(taskId)}/attempts/${attempt}/logs?after=${after}&limit=1000&level=${level}${q ? `&q=${encodeURIComponent(q)}` : ''}`;

/**
 * What the worker logged in one attempt of a task: live while it comes (follow), filtered by
 * level and by words, and downloadable whole. A worker that died leaves its lines here.
 */
export function AttemptLog({ taskId, attempts }: { taskId: string; attempts: number[] }) {
  const newest = attempts[attempts.length - 1];
  const [chosen, setChosen] = useState<number | undefined>(undefined);
  const attempt = chosen ?? newest;
  const [level, setLevel] = useState<string>('debug');
  const [words, setWords] = useState('');
  const [follow, setFollow] = useState(true);
  const [lines, setLines] = useState<Line[]>([]);
  const [dropped, setDropped] = useState(0);
  const [error, setError] = useState<unknown>(null);
  const box = useRef<HTMLOListElement>(null);

  useEffect(() => {
    if (attempt === undefined) return;
    let stopped = false;
    let after = -1;
    let timer: ReturnType<typeof setTimeout> | undefined;
    setLines([]);
    setError(null);
    const load = async (): Promise<void> => {
      try {
        for (;;) {
          const page = await api<AttemptLogPage>(logPath(taskId, attempt, after, level, words));
          if (stopped) return;
          if (page.items.length > 0) setLines((ls) => [...ls, ...page.items].slice(-SHOWN));
          after = page.next_after;
          setDropped(page.dropped);
          if (!page.has_more) break;
        }
      } catch (err) {
        if (!stopped) setError(err);
      }
      if (!stopped && follow) timer = setTimeout(() => void load(), 1000);
    };
    void load();
    return () => {
      stopped = true;
      clearTimeout(timer);
    };
  }, [taskId, attempt, level, words, follow]);

  useEffect(() => {
    if (follow && box.current) box.current.scrollTop = box.current.scrollHeight;
  }, [lines, follow]);

  if (attempt === undefined) return <Empty>No attempt has started.</Empty>;

  const download = async (): Promise<void> => {
    const all: Line[] = [];
    for (let after = -1; ;) {
      const page = await api<AttemptLogPage>(logPath(taskId, attempt, after, 'debug', ''));
      all.push(...page.items);
      after = page.next_after;
      if (!page.has_more) break;
    }
    const text = all
      .map(
        (l) =>
          `${l.at} ${l.level.toUpperCase()} ${l.message}${l.fields ? ` ${JSON.stringify(l.fields)}` : ''}`,
      )
      .join('\n');
    const a = document.createElement('a');
    a.href = URL.createObjectURL(new Blob([`${text}\n`], { type: 'text/plain' }));
    a.download = `${taskId}-attempt-${attempt}.log`;
    a.click();
    URL.revokeObjectURL(a.href);
  };

  return (
    <>
      <div className="filters">
        <label>
          Attempt{' '}
          <select value={attempt} onChange={(e) => setChosen(Number(e.target.value))}>
            {attempts.map((n) => (
              <option key={n} value={n}>
                {n}
              </option>
            ))}
          </select>
        </label>
        <label>
          Level{' '}
          <select value={level} onChange={(e) => setLevel(e.target.value)}>
            {LEVELS.map((l) => (
              <option key={l} value={l}>
                {l} and above
              </option>
            ))}
          </select>
        </label>
        <label>
          Search <input type="search" value={words} onChange={(e) => setWords(e.target.value)} />
        </label>
        <label>
          <input type="checkbox" checked={follow} onChange={(e) => setFollow(e.target.checked)} />{' '}
          Follow
        </label>
        <button type="button" onClick={() => void download()}>
          Download
        </button>
      </div>
      {error ? <ErrorState error={error} what="the log" /> : null}
      {dropped > 0 ? (
        <p className="muted">
          {dropped} earlier line(s) were dropped to keep the attempt within its caps.
        </p>
      ) : null}
      {lines.length === 0 ? (
        <Empty>
          The worker has logged nothing in attempt {attempt}
          {words ? ' that matches' : ''}.
        </Empty>
      ) : (
        <ol className="log" ref={box} tabIndex={0} aria-label={`Log of attempt ${attempt}`}>
          {lines.map((l) => (
            <li key={l.seq} className={`log-${l.level}`}>
              <span className="muted">{l.at.slice(11, 23)}</span> <strong>{l.level}</strong>{' '}
              {l.message}
              {l.fields ? <span className="muted"> {JSON.stringify(l.fields)}</span> : null}
            </li>
          ))}
        </ol>
      )}
    </>
  );
}
