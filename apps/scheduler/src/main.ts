import { Logger } from '@nestjs/common';
import { systemClock } from '@baton/time';
import { startTracing } from '@baton/task-contract';
import { createSchedulerApp } from './bootstrap';
import { Overload, ShutdownDeadline } from './common';
import { loadSchedulerConfig } from './config';

async function main(): Promise<void> {
  // Where the start-up time goes, from the process's start: loading the code, building the
  // modules (database, queue and lock connections, migrations), the start hooks, listening.
  const t0 = systemClock.now() - Math.round(process.uptime() * 1000);
  const loaded = systemClock.now();
  const config = loadSchedulerConfig();
  // Off unless OTEL_EXPORTER_OTLP_ENDPOINT is set: then nothing of OpenTelemetry is loaded.
  startTracing('baton-scheduler', { 'service.instance.id': config.instanceId });
  // SIGTERM (or Ctrl-C, ...) to exit, at most: a backend that went silent must not hold the exit.
  const deadline = new ShutdownDeadline(config.runner.shutdownGraceMs, systemClock, (ms) => {
    process.stderr.write(
      `scheduler ${config.instanceId}: shutdown still going after ${ms} ms (BATON_SHUTDOWN_GRACE_MS): exiting now; claims not handed back lapse by lease\n`,
    );
    process.exit(1);
  });
  // The signals Nest's shutdown hooks end the app on, the usual ones.
  for (const signal of ['SIGTERM', 'SIGINT', 'SIGHUP', 'SIGQUIT'] as const)
    process.once(signal, () => {
      deadline.start();
      // Before the app handles the signal (still starting): its default, an exit at once.
      if (process.listenerCount(signal) === 0) process.kill(process.pid, signal);
    });
  const app = await createSchedulerApp(config);
  const built = systemClock.now();
  await app.init();
  const hooked = systemClock.now();
  await app.listen(config.port, config.host);
  app.get(Overload).started();
  const listening = systemClock.now();
  // Tests and the launcher wait for this line.
  Logger.log(`scheduler ${config.instanceId} listening on ${await app.getUrl()}`, 'Scheduler');
  Logger.log(
    `started in ${listening - t0} ms: code ${loaded - t0} ms, modules ${built - loaded} ms, ` +
      `start hooks ${hooked - built} ms, listen ${listening - hooked} ms`,
    'Scheduler',
  );
}

main().catch((err: unknown) => {
  console.error(err instanceof Error ? (err.stack ?? err.message) : err);
  process.exit(1);
});
