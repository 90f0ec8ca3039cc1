export * from './engine.module';
export * from './engine.tokens';
export { DRIVABLE, EARLY_CLAIM_MS, message } from './engine-rules';
export * from './resource-leases';
export * from './task-engine.service';
export * from './worker-reports';
