import { DynamicModule, Module } from '@nestjs/common';
import { LoggerModule } from 'nestjs-pino';
import { stdTimeFunctions } from 'pino';
import { SchedulerConfig } from '../config';

/**
 * The scheduler's log: pino, one JSON object a line (or pretty lines with BATON_LOG_FORMAT=pretty,
 * as `npm start` sets), at BATON_LOG_LEVEL, through nestjs-pino. Every line names the instance.
 * Fields about a task or a request are passed with the line (TaskLog.line; the API's error
 * lines carry `request_id` and `trace_id`), not read from a request- or task-scoped context:
 * nestjs-pino's per-request middleware and its AsyncLocalStorage are left out, for the promise
 * hooks AsyncLocalStorage needs on Node 20 cost the scheduler about 8% of its throughput.
 * Requests themselves are not logged one by one: the metrics count them.
 */
/**
 * Whether pino-pretty is installed: a development dependency (a production install, `npm ci
 * --omit=dev` as the Dockerfiles do, leaves it out). Without it `pretty` falls back to JSON lines,
 * saying so once, rather than failing to start.
 */
function prettyAvailable(): boolean {
  try {
    require.resolve('pino-pretty');
    return true;
  } catch {
    process.stderr.write(
      'BATON_LOG_FORMAT=pretty needs pino-pretty, a development dependency not installed here: logging JSON lines\n',
    );
    return false;
  }
}

@Module({})
export class LoggingModule {
  static forConfig(config: SchedulerConfig): DynamicModule {
    return {
      module: LoggingModule,
      imports: [
        LoggerModule.forRoot({
          // No route gets the request-logger middleware (see above).
          forRoutes: [],
          pinoHttp: {
            level: config.log.level,
            base: { instance: config.instanceId },
            timestamp: stdTimeFunctions.isoTime,
            formatters: { level: (label) => ({ level: label }) },
            ...(config.log.format === 'pretty' && prettyAvailable()
              ? {
                  transport: {
                    target: 'pino-pretty',
                    options: { singleLine: true, translateTime: 'SYS:HH:MM:ss.l' },
                  },
                }
              : {}),
          },
        }),
      ],
    };
  }
}
