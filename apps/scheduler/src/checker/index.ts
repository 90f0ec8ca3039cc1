export * from './checker.module';
