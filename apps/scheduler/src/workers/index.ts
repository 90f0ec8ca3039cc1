import { WorkerEntity } from './worker.entity';

export * from './worker.model';
export * from './workers.module';
export * from './workers.service';
export * from './worker-health-watch';
export type { WorkerDto } from './dto/worker.dto';
/** The body workers register with (the API's validation leaves its nulls to the worker contract). */
export { RegisterWorkerDto } from './dto/worker.dto';

/** The tables this module owns, for the data source. */
export const WORKERS_ENTITIES = [WorkerEntity];
