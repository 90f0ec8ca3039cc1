/** The console's settings, read once at boot. */
export interface ConsoleConfig {
  host: string;
  port: number;
  /** Where people's browsers reach the scheduler. */
  schedulerPublicUrl: string;
}

export const CONSOLE_CONFIG = Symbol('CONSOLE_CONFIG');

export function loadConsoleConfig(env: NodeJS.ProcessEnv = process.env): ConsoleConfig {
  const raw = env.CONSOLE_PORT ?? '3001';
  const port = Number(raw);
  if (!Number.isInteger(port) || port < 0 || port > 65535) {
    throw new Error(`CONSOLE_PORT must be a port number, got ${JSON.stringify(raw)}`);
  }
  return {
    host: env.CONSOLE_HOST ?? '127.0.0.1',
    port,
    schedulerPublicUrl: env.BATON_SCHEDULER_PUBLIC_URL ?? 'http://127.0.0.1:3000',
  };
}
