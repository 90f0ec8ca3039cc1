export * from './clock';
export * from './common.module';
export * from './crash-points';
export * from './id-generator';
export * from './periodic-loop';
