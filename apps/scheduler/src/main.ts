import { Logger } from '@nestjs/common';
import { createSchedulerApp } from './bootstrap';
import { loadSchedulerConfig } from './config';

async function main(): Promise<void> {
  const config = loadSchedulerConfig();
  const app = await createSchedulerApp(config);
  await app.listen(config.port, config.host);
  // Tests and the launcher wait for this line.
  Logger.log(`scheduler ${config.instanceId} listening on ${await app.getUrl()}`, 'Scheduler');
}

main().catch((err: unknown) => {
  console.error(err instanceof Error ? (err.stack ?? err.message) : err);
  process.exit(1);
});
