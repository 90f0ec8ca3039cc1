import { randomBytes } from 'node:crypto';
import type * as OtelApi from '@opentelemetry/api';
import type { IdGenerator } from '@opentelemetry/sdk-trace-base';

/** Span attributes Baton sets: flat, bounded values. */
export type SpanAttributes = Record<string, string | number | boolean | undefined>;

/** One span being timed. Its `traceparent` names it, for the calls it makes. */
export interface OpenSpan {
  /** A W3C traceparent whose parent id is this span. */
  readonly traceparent: string;
  /** Ends the span; `error` marks it failed with that message. */
  end(attributes?: SpanAttributes, error?: string): void;
}

/** What a process sends to OpenTelemetry; a no-op unless an OTLP endpoint is configured. */
export interface Tracing {
  readonly enabled: boolean;
  /**
   * A span in the trace of `parent` (a traceparent), as its child: 'client' for a call made,
   * 'server' for a call answered. Undefined when tracing is off or `parent` is not a traceparent.
   */
  start(
    name: string,
    kind: 'client' | 'server' | 'internal',
    parent: string | undefined,
    attributes?: SpanAttributes,
  ): OpenSpan | undefined;
  /**
   * A span that already happened, with the ids it must have: the root span of a task attempt,
   * written when the attempt ends, whose id every call of the attempt named as its parent.
   */
  record(
    name: string,
    ids: { traceId: string; spanId: string },
    startMs: number,
    endMs: number,
    attributes?: SpanAttributes,
    error?: string,
  ): void;
  /** Sends what is buffered (at shutdown, and in tests). */
  flush(): Promise<void>;
  shutdown(): Promise<void>;
}

const OFF: Tracing = {
  enabled: false,
  start: () => undefined,
  record: () => undefined,
  flush: async () => undefined,
  shutdown: async () => undefined,
};

let current: Tracing = OFF;

/** This process's tracing: off until `startTracing` turned it on. */
export function tracing(): Tracing {
  return current;
}

/** Whether the environment asks for traces: an OTLP endpoint is set and the SDK is not disabled. */
export function tracingWanted(env: NodeJS.ProcessEnv = process.env): boolean {
  if ((env.OTEL_SDK_DISABLED ?? '').toLowerCase() === 'true') return false;
  if ((env.OTEL_TRACES_EXPORTER ?? '').toLowerCase() === 'none') return false;
  return Boolean(env.OTEL_EXPORTER_OTLP_ENDPOINT || env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT);
}

/**
 * Turns tracing on for this process when the environment asks for it (`tracingWanted`): spans go
 * in batches to the OTLP/HTTP endpoint of `OTEL_EXPORTER_OTLP_ENDPOINT` (or
 * `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`), with the exporter's and batch processor's other `OTEL_*`
 * settings, as service `OTEL_SERVICE_NAME` or `serviceName`. When it does not, nothing of
 * OpenTelemetry is loaded and every span call returns at once. Call it once, early; later calls
 * answer the first one's result.
 */
export function startTracing(
  serviceName: string,
  attributes: SpanAttributes = {},
  env: NodeJS.ProcessEnv = process.env,
): Tracing {
  if (current !== OFF || !tracingWanted(env)) return current;
  current = new OtelTracing(env.OTEL_SERVICE_NAME || serviceName, attributes);
  return current;
}

/** Ends tracing for this process, sending what is buffered. */
export async function stopTracing(): Promise<void> {
  const t = current;
  current = OFF;
  await t.shutdown();
}

const TRACEPARENT = /^([\da-f]{2})-([\da-f]{32})-([\da-f]{16})-([\da-f]{2})$/;

/** The OpenTelemetry SDK behind `Tracing`, loaded only when tracing is on. */
class OtelTracing implements Tracing {
  readonly enabled = true;
  private readonly api: typeof OtelApi;
  private readonly tracer: OtelApi.Tracer;
  private readonly provider: { forceFlush(): Promise<void>; shutdown(): Promise<void> };
  /** Ids the next span must have (`record`): set and used within one synchronous call. */
  private forced: { traceId: string; spanId: string } | undefined;

  constructor(serviceName: string, attributes: SpanAttributes) {
    /* eslint-disable @typescript-eslint/no-require-imports -- loaded only when tracing is on */
    this.api = require('@opentelemetry/api') as typeof OtelApi;
    const sdk =
      require('@opentelemetry/sdk-trace-base') as typeof import('@opentelemetry/sdk-trace-base');
    const { OTLPTraceExporter } =
      require('@opentelemetry/exporter-trace-otlp-http') as typeof import('@opentelemetry/exporter-trace-otlp-http');
    const { resourceFromAttributes } =
      require('@opentelemetry/resources') as typeof import('@opentelemetry/resources');
    /* eslint-enable @typescript-eslint/no-require-imports */
    const ids: IdGenerator = {
      generateTraceId: () => this.forced?.traceId ?? randomBytes(16).toString('hex'),
      generateSpanId: () => this.forced?.spanId ?? randomBytes(8).toString('hex'),
    };
    const provider = new sdk.BasicTracerProvider({
      resource: resourceFromAttributes({ 'service.name': serviceName, ...defined(attributes) }),
      idGenerator: ids,
      spanProcessors: [new sdk.BatchSpanProcessor(new OTLPTraceExporter())],
    });
    this.provider = provider;
    this.tracer = provider.getTracer('baton');
  }

  start(
    name: string,
    kind: 'client' | 'server' | 'internal',
    parent: string | undefined,
    attributes?: SpanAttributes,
  ): OpenSpan | undefined {
    const m = parent === undefined ? null : TRACEPARENT.exec(parent);
    if (!m) return undefined;
    const api = this.api;
    const context = api.trace.setSpanContext(api.ROOT_CONTEXT, {
      traceId: m[2],
      spanId: m[3],
      traceFlags: parseInt(m[4], 16) & 1,
      isRemote: true,
    });
    const span = this.tracer.startSpan(
      name,
      { kind: KINDS[kind], attributes: attributes && defined(attributes) },
      context,
    );
    const own = span.spanContext();
    return {
      traceparent: `00-${own.traceId}-${own.spanId}-0${own.traceFlags & 1}`,
      end: (more, error) => {
        if (more) span.setAttributes(defined(more));
        if (error !== undefined) span.setStatus({ code: api.SpanStatusCode.ERROR, message: error });
        span.end();
      },
    };
  }

  record(
    name: string,
    ids: { traceId: string; spanId: string },
    startMs: number,
    endMs: number,
    attributes?: SpanAttributes,
    error?: string,
  ): void {
    this.forced = ids;
    let span: OtelApi.Span;
    try {
      span = this.tracer.startSpan(
        name,
        {
          kind: this.api.SpanKind.INTERNAL,
          root: true,
          startTime: startMs,
          attributes: attributes && defined(attributes),
        },
        this.api.ROOT_CONTEXT,
      );
    } finally {
      this.forced = undefined;
    }
    if (error !== undefined)
      span.setStatus({ code: this.api.SpanStatusCode.ERROR, message: error });
    span.end(Math.max(startMs, endMs));
  }

  flush(): Promise<void> {
    return this.provider.forceFlush();
  }

  shutdown(): Promise<void> {
    return this.provider.shutdown();
  }
}

const KINDS = { internal: 0, server: 1, client: 2 } as const;

function defined(attributes: SpanAttributes): Record<string, string | number | boolean> {
  const out: Record<string, string | number | boolean> = {};
  for (const [k, v] of Object.entries(attributes)) if (v !== undefined) out[k] = v;
  return out;
}
