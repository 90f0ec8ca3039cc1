export * from './health.module';
export * from './backend-gate';
export * from './backend-watch';
