export * from './retention.module';
export * from './retention.service';
