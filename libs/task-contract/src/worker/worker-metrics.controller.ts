import { Controller, Get, Header } from '@nestjs/common';
import { ApiExcludeController } from '@nestjs/swagger';
import { TaskWorkerService } from './task-worker.service';

/**
 * `GET /metrics`: the worker's own metrics in the Prometheus text format (WorkerMetrics). Not a
 * call of the task contract, and like a health probe it takes no credentials.
 */
@ApiExcludeController()
@Controller('metrics')
export class WorkerMetricsController {
  constructor(private readonly worker: TaskWorkerService) {}

  @Get()
  @Header('content-type', 'text/plain; version=0.0.4; charset=utf-8')
  scrape(): Promise<string> {
    return this.worker.metrics.scrape();
  }
}
