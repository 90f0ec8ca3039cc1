import { WorkerEntity } from './worker.entity';

export * from './worker.model';
export * from './workers.module';
export * from './workers.service';

/** The tables this module owns, for the data source. */
export const WORKERS_ENTITIES = [WorkerEntity];
