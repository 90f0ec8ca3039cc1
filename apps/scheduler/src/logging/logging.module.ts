import { randomUUID } from 'node:crypto';
import { IncomingMessage } from 'node:http';
import { DynamicModule, Module } from '@nestjs/common';
import { HEADER, traceIdOf } from '@baton/task-contract';
import { LoggerModule } from 'nestjs-pino';
import { stdTimeFunctions } from 'pino';
import { TaskLogContext } from '../common';
import { SchedulerConfig } from '../config';

/** A caller's request id, when it is a sensible one to log (else the scheduler makes one). */
const REQUEST_ID = /^[\w.:/@-]{1,128}$/;

/**
 * The scheduler's log: pino, one JSON object a line (or pretty lines with BATON_LOG_FORMAT=pretty,
 * as `npm start` sets), at BATON_LOG_LEVEL. Every line names the instance; a line written while
 * an API request is served carries its `request_id` (the caller's X-Request-Id, or a new one) and
 * the `trace_id` of its traceparent; a line written while a task is driven carries `task_id`,
 * `attempt` and the attempt's `trace_id` (TaskLogContext). Requests themselves are not logged
 * one by one: the metrics count them.
 */
@Module({})
export class LoggingModule {
  static forConfig(config: SchedulerConfig): DynamicModule {
    return {
      module: LoggingModule,
      imports: [
        LoggerModule.forRoot({
          pinoHttp: {
            level: config.log.level,
            base: { instance: config.instanceId },
            timestamp: stdTimeFunctions.isoTime,
            formatters: { level: (label) => ({ level: label }) },
            mixin: () => TaskLogContext.fields() ?? {},
            genReqId: (req: IncomingMessage) => {
              const given = req.headers[HEADER.REQUEST_ID];
              return typeof given === 'string' && REQUEST_ID.test(given) ? given : randomUUID();
            },
            customAttributeKeys: { reqId: 'request_id' },
            quietReqLogger: true,
            autoLogging: false,
            customProps: (req: IncomingMessage) => {
              const trace = traceIdOf(req.headers[HEADER.TRACEPARENT]);
              return trace ? { trace_id: trace } : {};
            },
            ...(config.log.format === 'pretty'
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
