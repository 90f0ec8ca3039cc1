import { useEffect, useRef, useState } from 'react';
import { apiKey } from './api';

/** A task change as the scheduler's live stream tells it. */
export interface TaskChange {
  event_id: number;
  task_id: string;
  task_type: string;
  control_task_id: string | null;
  from: string | null;
  to: string;
  outcome: string | null;
  at: string;
}

/** What a view watches: the rows it shows, a run's tasks, or a type. */
export interface LiveFilter {
  taskIds?: readonly string[];
  controlTaskId?: string;
  taskType?: string;
}

/** Wait before connecting again after the stream failed or ended, growing to a minute. */
const RETRY_MS = [1000, 2000, 5000, 15_000, 60_000];
/** Changes arriving together are told once (a task moves through several statuses at once). */
const GATHER_MS = 300;

function streamPath(f: LiveFilter): string | undefined {
  const q = new URLSearchParams();
  if (f.taskIds) {
    if (f.taskIds.length === 0) return undefined; // nothing shown: nothing to watch
    q.set('task_id', [...f.taskIds].sort().join(','));
  }
  if (f.controlTaskId) q.set('control_task_id', f.controlTaskId);
  if (f.taskType) q.set('task_type', f.taskType);
  return `/api/v1/task-changes/stream?${q.toString()}`;
}

/**
 * Follows the scheduler's stream of task changes for what a view shows, and calls `onChange` with
 * the changes (gathered for a moment) so the view reads again what moved. Answers whether the
 * stream is connected: while it is not (refused, the network, an old scheduler), the view polls
 * as it would without it. Reconnects with Last-Event-ID, so a short break loses nothing.
 */
export function useTaskChanges(
  filter: LiveFilter,
  onChange: (changes: TaskChange[]) => void,
): boolean {
  const [connected, setConnected] = useState(false);
  const callback = useRef(onChange);
  callback.current = onChange;
  const path = streamPath(filter);

  useEffect(() => {
    if (!path) return;
    const abort = new AbortController();
    let lastId: string | undefined;
    let failures = 0;
    let pending: TaskChange[] = [];
    let timer: number | undefined;
    const flush = (): void => {
      timer = undefined;
      const changes = pending;
      pending = [];
      if (changes.length > 0) callback.current(changes);
    };
    const run = async (): Promise<void> => {
      while (!abort.signal.aborted) {
        try {
          const headers: Record<string, string> = { accept: 'text/event-stream' };
          const key = apiKey.get();
          if (key) headers.authorization = `Bearer ${key}`;
          if (lastId) headers['last-event-id'] = lastId;
          const res = await fetch(path, { headers, signal: abort.signal });
          const type = res.headers.get('content-type') ?? '';
          if (!res.ok || !res.body || !type.startsWith('text/event-stream'))
            throw new Error(`the stream answered ${res.status}`);
          setConnected(true);
          failures = 0;
          await read(res.body, (event, id, data) => {
            if (id) lastId = id;
            if (event === 'task') pending.push(JSON.parse(data) as TaskChange);
            else if (event === 'reset') pending.push({ task_id: '*' } as TaskChange);
            if (pending.length > 0 && timer === undefined)
              timer = window.setTimeout(flush, GATHER_MS);
          });
        } catch {
          if (abort.signal.aborted) return;
          failures++;
        }
        setConnected(false);
        await new Promise((r) =>
          window.setTimeout(r, RETRY_MS[Math.min(failures, RETRY_MS.length - 1)]),
        );
      }
    };
    void run();
    return () => {
      abort.abort();
      window.clearTimeout(timer);
      setConnected(false);
    };
  }, [path]);

  return connected && path !== undefined;
}

/** Reads a text/event-stream body to its end, calling `onMessage` for each message. */
async function read(
  body: ReadableStream<Uint8Array>,
  onMessage: (event: string, id: string | undefined, data: string) => void,
): Promise<void> {
  const reader = body.getReader();
  const decoder = new TextDecoder();
  let buffer = '';
  let event = 'message';
  let id: string | undefined;
  let data: string[] = [];
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return;
    buffer += decoder.decode(value, { stream: true });
    let nl: number;
    while ((nl = buffer.indexOf('\n')) >= 0) {
      const line = buffer.slice(0, nl).replace(/\r$/, '');
      buffer = buffer.slice(nl + 1);
      if (line === '') {
        if (id !== undefined || data.length > 0) onMessage(event, id, data.join('\n'));
        event = 'message';
        id = undefined;
        data = [];
        continue;
      }
      if (line.startsWith(':')) continue;
      const colon = line.indexOf(':');
      const field = colon < 0 ? line : line.slice(0, colon);
      const value = colon < 0 ? '' : line.slice(colon + 1).replace(/^ /, '');
      if (field === 'event') event = value;
      else if (field === 'id') id = value;
      else if (field === 'data') data.push(value);
    }
  }
}
