/** The WorkerClient the engine calls workers with (one per process: keep-alive pools). */
export const WORKER_CLIENT = Symbol('WORKER_CLIENT');
