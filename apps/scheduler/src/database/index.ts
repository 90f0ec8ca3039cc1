export * from './column-transformers';
export * from './data-source.factory';
export * from './database.module';
export * from './transaction-runner';
export * from './pool-hygiene';
export * from './open-data-source';
export * from './migrate-locked';
