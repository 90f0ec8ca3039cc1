/**
 * @baton/task-contract — the uniform task contract as code (docs/architecture.md–§4): statuses and
 * their transition table, DTOs and the error table, the worker-side Nest module, the scheduler's
 * WorkerClient, the async worker's CallbackClient, and request signing.
 */
export * from './enums/task-status.enum';
export * from './enums/task-action.enum';
export * from './enums/task-kind.enum';
export * from './state-machine/transition-table';
export * from './errors/contract.exception';
export * from './errors/worker-call.errors';
export * from './dto/create-info.dto';
export * from './dto/process-arg.dto';
export * from './dto/worker-requests.dto';
export * from './dto/worker-responses.dto';
export * from './dto/envelope.dto';
export * from './dto/callback.dto';
export * from './dto/fast-validators';
export * from './util/headers';
export * from './util/trace';
export * from './util/tracing';
export * from './util/json-shape';
export * from './util/outgoing-url';
export * from './util/keyed-mutex';
export * from './util/validate';
export * from './util/null-policy';
export * from './util/wait-until';
export * from './worker/auth/request-auth';
export * from './worker/task-handler.interface';
export type { RunLog } from './worker/attempt-log-shipper';
export * from './worker/task-record';
export * from './worker/task-worker.service';
export * from './worker/task-worker.module';
export * from './worker/task-worker.controller';
export * from './worker/worker-metrics';
export * from './worker/worker-metrics.controller';
export * from './worker/contract-exception.filter';
export * from './worker/worker-callbacks.interface';
export * from './worker/stores/task-store.interface';
export * from './worker/stores/memory.task-store';
export * from './worker/stores/sqlite.task-store';
export * from './worker/stores/task-store.factory';
export * from './client/json-http';
export * from './client/worker-client';
export * from './client/callback-client';
export * from './openapi/worker-openapi';
export * from './openapi/contract-compat';
export * from './conformance/conformance-kit';
export * from './conformance/check-fingerprints';
export * from './conformance/worker-side/worker-side-kit';
export * from './worker/worker-auth.guard';
export * from './worker/contract-fast-path';
export * from './worker/worker-tracing';
export * from './client/registration-client';
export * from './client/scheduler-urls';
