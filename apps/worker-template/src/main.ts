import { Logger } from '@nestjs/common';
import { startTracing, TaskWorkerService, WorkerRegistration } from '@baton/task-contract';
import { createWorkerApp } from './bootstrap';
import { loadWorkerConfig } from './config/worker.config';

async function main(): Promise<void> {
  const config = loadWorkerConfig();
  // Spans of the calls it answers, in the scheduler's trace, when OTEL_EXPORTER_OTLP_ENDPOINT is set.
  startTracing('baton-worker', {
    'service.instance.id': config.workerId,
    'service.version': config.version,
  });
  const app = await createWorkerApp(config);
  await app.listen(config.port, config.host);
  const url = await app.getUrl();
  // Tests and the launcher wait for this line.
  Logger.log(`worker ${config.workerId} listening on ${url}`, 'WorkerTemplate');
  if (config.schedulerUrl) {
    const registration = new WorkerRegistration({
      schedulerUrl: config.schedulerUrl,
      auth: config.auth,
      workerId: config.workerId,
      publicUrl: config.publicUrl || url,
      version: config.version,
      capacity: config.capacity,
      heartbeatMs: config.heartbeatMs,
      taskTypes: app.get(TaskWorkerService).describe(),
      // Quiet while the scheduler is still starting; a warning per distinct problem after that.
      logger: new Logger('WorkerTemplate'),
    });
    await registration.start();
    // bootstrap() enabled Nest's shutdown hooks; the registration stops with the process.
    process.once('SIGTERM', () => void registration.stop());
  }
}

main().catch((err: unknown) => {
  console.error(err instanceof Error ? err.message : err);
  process.exit(1);
});
