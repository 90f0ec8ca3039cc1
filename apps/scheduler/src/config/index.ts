export * from './config.module';
export * from './database.config';
export * from './queue.config';
export * from './scheduler.config';
