export * from './task-metrics.module';
