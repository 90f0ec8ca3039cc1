import { request } from 'undici';
import { RunningProcess, startProcess } from './processes';

export const RECEIVER = 'test/fixtures/webhook-receiver/receiver.js';

/** One delivery as the test receiver kept it. */
export interface Got {
  name: string;
  id: string;
  timestamp: string;
  signature: string;
  verified: boolean;
  why: string | null;
  type: string;
  task_id: string | null;
  task_status: string | null;
  at: number;
  answered: string | number;
  body: string;
}

/**
 * The test receiver: a process of its own that verifies each delivery with the `standardwebhooks`
 * library and keeps what it got (in `log` too, when given: a restarted receiver still knows).
 */
export class Receiver {
  constructor(readonly proc: RunningProcess) {}

  /** `secrets`: by hook name, the secrets it verifies with from its first request. */
  static async start(
    env: { port?: number; log?: string; secrets?: Record<string, string[]> } = {},
  ): Promise<Receiver> {
    return new Receiver(
      await startProcess(RECEIVER, {
        PORT: String(env.port ?? 0),
        ...(env.log ? { RECEIVER_LOG: env.log } : {}),
        ...(env.secrets ? { RECEIVER_SECRETS: JSON.stringify(env.secrets) } : {}),
      }),
    );
  }

  /** The URL of one of its hooks, by name (at `localhost`: the schedulers allow that host). */
  hook(name: string): string {
    return `${this.proc.url.replace('127.0.0.1', 'localhost')}/hook/${name}`;
  }

  async control(what: 'secret' | 'mode', body: Record<string, unknown>): Promise<void> {
    const res = await request(`${this.proc.url}/_control/${what}`, {
      method: 'POST',
      body: JSON.stringify(body),
    });
    await res.body.text();
  }

  async got(name: string): Promise<Got[]> {
    const res = await request(`${this.proc.url}/_received?name=${encodeURIComponent(name)}`);
    return (await res.body.json()) as Got[];
  }
}
