import { ADMIN_KEY } from '../support/baton';
import { InProcessBaton, startInProcess } from '../support/in-process';

jest.setTimeout(60_000);

/**
 * A create sent again under its Idempotency-Key, or its body's idempotency_key: the first is 201
 * Created, every repeat 200 with the same task (nothing is created again), as docs/tasks.md says;
 * a different body under the key is 422.
 */
describe('a create sent again', () => {
  let baton: InProcessBaton;

  beforeAll(async () => {
    baton = await startInProcess();
    await baton.addWorker('idempotent-w1');
  });

  afterAll(async () => {
    await baton?.stop();
  });

  const post = async (body: unknown, key?: string) => {
    const res = await fetch(`${baton.api.base}/v1/tasks`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${ADMIN_KEY}`,
        'content-type': 'application/json',
        ...(key ? { 'idempotency-key': key } : {}),
      },
      body: JSON.stringify(body),
    });
    const json = (await res.json()) as { code: number; data: { task_id: string } | null };
    return { status: res.status, code: json.code, taskId: json.data?.task_id };
  };
  const echo = (name: string, extra: Record<string, unknown> = {}) => ({
    create_info: { task_type: 'demo.echo', task_name: name },
    ...extra,
  });

  it('answers 201 once, then 200 with the same task, by header or by body key', async () => {
    const first = await post(echo('by header'), 'repeat-1');
    const again = await post(echo('by header'), 'repeat-1');
    expect([first.status, again.status, again.taskId]).toEqual([201, 200, first.taskId]);
    const other = await post(echo('another body'), 'repeat-1');
    expect([other.status, other.code]).toEqual([422, 42200]);

    const byBody = echo('by body', { idempotency_key: 'repeat-2' });
    const b1 = await post(byBody);
    const b2 = await post(byBody);
    expect([b1.status, b2.status, b2.taskId]).toEqual([201, 200, b1.taskId]);
  });
});
