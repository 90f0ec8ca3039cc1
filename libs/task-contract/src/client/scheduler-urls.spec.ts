import { ContractErrorCode } from '../errors/contract.exception';
import { StaleFenceError, WorkerUnavailableError } from '../errors/worker-call.errors';
import { SchedulerUrls } from './scheduler-urls';

const down = (): WorkerUnavailableError =>
  new WorkerUnavailableError('connect ECONNREFUSED', ContractErrorCode.WORKER_UNAVAILABLE, 0);

describe('SchedulerUrls', () => {
  it('reads one URL or several, separated by commas', () => {
    expect(new SchedulerUrls('http://a:3000/').all).toEqual(['http://a:3000']);
    expect(new SchedulerUrls(' http://a:3000, http://b:3000 ,').all).toEqual([
      'http://a:3000',
      'http://b:3000',
    ]);
    expect(() => new SchedulerUrls(' , ')).toThrow('no scheduler URL');
  });

  it('hands a call to the next instance when one cannot be reached, and stays there', async () => {
    const urls = new SchedulerUrls('http://a,http://b,http://c');
    const seen: string[] = [];
    const answer = await urls.call(async (url) => {
      seen.push(url);
      if (url !== 'http://b') throw down();
      return `from ${url}`;
    });
    expect(answer).toBe('from http://b');
    expect(seen).toEqual(['http://a', 'http://b']);
    // The next call starts where the last answer came from.
    seen.length = 0;
    await urls.call(async (url) => void seen.push(url));
    expect(seen).toEqual(['http://b']);
  });

  it('does not try elsewhere what an instance answered, and fails when none answers', async () => {
    const urls = new SchedulerUrls('http://a,http://b');
    const seen: string[] = [];
    await expect(
      urls.call(async (url) => {
        seen.push(url);
        throw new StaleFenceError('stale', ContractErrorCode.STALE_FENCE, 409);
      }),
    ).rejects.toBeInstanceOf(StaleFenceError);
    expect(seen).toEqual(['http://a']);
    await expect(urls.call(async () => Promise.reject(down()))).rejects.toBeInstanceOf(
      WorkerUnavailableError,
    );
  });
});
