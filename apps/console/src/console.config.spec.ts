import { join } from 'node:path';
import { loadConsoleConfig } from './console.config';

describe('loadConsoleConfig', () => {
  it('defaults to the embedded setup: 127.0.0.1:3001, the scheduler on 3000, the built pages', () => {
    const config = loadConsoleConfig({});
    expect(config).toEqual({
      host: '127.0.0.1',
      port: 3001,
      schedulerUrl: 'http://127.0.0.1:3000',
      uiDir: join(__dirname, '..', '..', '..', 'console-ui'),
      apiTimeoutMs: 30000,
    });
  });

  it('takes the scheduler URL without its trailing slash, and the older setting when alone', () => {
    expect(loadConsoleConfig({ BATON_SCHEDULER_URL: 'http://sched:3000/' }).schedulerUrl).toBe(
      'http://sched:3000',
    );
    expect(
      loadConsoleConfig({ BATON_SCHEDULER_PUBLIC_URL: 'https://baton.example.com' }).schedulerUrl,
    ).toBe('https://baton.example.com');
  });

  it.each([
    [{ CONSOLE_PORT: 'eighty' }, /CONSOLE_PORT/],
    [{ CONSOLE_PORT: '70000' }, /CONSOLE_PORT/],
    [{ BATON_SCHEDULER_URL: 'ftp://sched' }, /BATON_SCHEDULER_URL/],
    [{ BATON_SCHEDULER_URL: 'not a url' }, /BATON_SCHEDULER_URL/],
    [{ BATON_SCHEDULER_URL: 'http://user:pw@sched:3000' }, /plain base URL/],
    [{ CONSOLE_API_TIMEOUT_MS: '5' }, /CONSOLE_API_TIMEOUT_MS/],
  ])('refuses %j at boot', (env, message) => {
    expect(() => loadConsoleConfig(env)).toThrow(message);
  });
});
