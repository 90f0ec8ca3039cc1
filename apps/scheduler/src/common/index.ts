export * from './clock';
export * from './common.module';
export * from './crash-points';
export * from './id-generator';
export * from './lifecycle';
export * from './overload';
export * from './periodic-loop';
export * from './fast-validation.pipe';
