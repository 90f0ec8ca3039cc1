import { request } from 'undici';

/** One message of a server-sent-events stream. */
export interface SseMessage {
  event: string;
  id: string | undefined;
  data: string;
}

/** An open event stream, read as it comes: every message so far, and whether it ended. */
export interface SseStream {
  status: number;
  /** The envelope of a refusal (not a stream). */
  refusal?: { code: number; message: string };
  messages: SseMessage[];
  /** The `data` of each `event: task` message, parsed. */
  tasks(): Record<string, unknown>[];
  /** The last id the stream gave (what Last-Event-ID resumes from). */
  lastId(): string | undefined;
  ended: Promise<void>;
  close(): void;
}

/** Opens `url` as a text/event-stream and parses it line by line, as a browser would. */
export async function openStream(url: string, headers: Record<string, string>): Promise<SseStream> {
  const abort = new AbortController();
  const res = await request(url, {
    headers: { accept: 'text/event-stream', ...headers },
    signal: abort.signal,
    bodyTimeout: 0,
  });
  const messages: SseMessage[] = [];
  let lastId: string | undefined;
  const stream: SseStream = {
    status: res.statusCode,
    messages,
    tasks: () =>
      messages
        .filter((m) => m.event === 'task')
        .map((m) => JSON.parse(m.data) as Record<string, unknown>),
    lastId: () => lastId,
    ended: Promise.resolve(),
    close: () => abort.abort(),
  };
  if (!String(res.headers['content-type']).startsWith('text/event-stream')) {
    stream.refusal = (await res.body.json()) as { code: number; message: string };
    return stream;
  }
  stream.ended = (async () => {
    let buffer = '';
    let current: { event: string; id?: string; data: string[] } = { event: 'message', data: [] };
    try {
      for await (const chunk of res.body) {
        buffer += (chunk as Buffer).toString('utf8');
        let nl: number;
        while ((nl = buffer.indexOf('\n')) >= 0) {
          const line = buffer.slice(0, nl);
          buffer = buffer.slice(nl + 1);
          if (line === '') {
            if (current.id !== undefined) lastId = current.id;
            if (current.data.length > 0)
              messages.push({
                event: current.event,
                id: current.id,
                data: current.data.join('\n'),
              });
            current = { event: 'message', data: [] };
          } else if (line.startsWith(':')) continue;
          else {
            const colon = line.indexOf(':');
            const field = colon < 0 ? line : line.slice(0, colon);
            const value = colon < 0 ? '' : line.slice(colon + 1).replace(/^ /, '');
            if (field === 'event') current.event = value;
            else if (field === 'data') current.data.push(value);
            else if (field === 'id') current.id = value;
          }
        }
      }
    } catch {
      // closed by us
    }
  })();
  return stream;
}
