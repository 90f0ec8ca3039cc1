export * from './runner.module';
export * from './runner.service';
