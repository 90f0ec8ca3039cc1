export * from './dispatcher.module';
