export * from './metrics';
export * from './metrics.module';
export * from './cached';
export * from './families';
