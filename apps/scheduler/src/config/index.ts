export * from './api-auth.config';
export * from './config.module';
export * from './database.config';
export * from './outgoing.config';
export * from './queue.config';
export * from './scheduler.config';
export * from './webhooks.config';
export * from './log.config';
