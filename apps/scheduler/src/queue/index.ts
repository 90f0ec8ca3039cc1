export * from './enqueue-tracker';
export * from './queue-lanes';
export * from './queue.driver';
export * from './queue.exception';
export * from './queue.factory';
export * from './queue.module';
