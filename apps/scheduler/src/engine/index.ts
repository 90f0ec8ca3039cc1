export * from './engine.module';
export * from './engine.tokens';
export * from './resource-leases';
export { DRIVABLE, EARLY_CLAIM_MS, TaskEngine } from './task-engine.service';
