import {
  Body,
  Controller,
  Delete,
  Get,
  HttpCode,
  Param,
  Post,
  Put,
  UseGuards,
} from '@nestjs/common';
import { ApiOkResponse, ApiOperation, ApiSecurity, ApiTags } from '@nestjs/swagger';
import { Envelope, WorkerAuthGuard, ok } from '@baton/task-contract';
import { Clock } from '../common';
import { RegisterWorkerDto, WorkerDto, toWorkerDto } from './dto/worker.dto';
import { WorkersService } from './workers.service';
import { Access } from '../auth';

const WORKER_ID_ANSWER = {
  type: 'object',
  required: ['worker_id'],
  properties: { worker_id: { type: 'string' } },
};

@ApiTags('workers')
@Controller('v1/workers')
export class WorkersController {
  constructor(
    private readonly workers: WorkersService,
    private readonly clock: Clock,
  ) {}

  @Post()
  @HttpCode(200)
  @Access('worker')
  @UseGuards(WorkerAuthGuard)
  @ApiSecurity('hmac')
  @ApiOperation({
    summary: 'register (or re-register) a worker instance and the task types it serves',
  })
  @ApiOkResponse({ type: WorkerDto })
  async register(@Body() dto: RegisterWorkerDto): Promise<Envelope<WorkerDto>> {
    const w = await this.workers.register(dto);
    return ok(toWorkerDto(w, 0, this.workers.health(w, this.clock.now())));
  }

  @Put(':worker_id/heartbeat')
  @Access('worker')
  @UseGuards(WorkerAuthGuard)
  @ApiSecurity('hmac')
  @ApiOperation({ summary: 'a worker says it is alive (404: register again)' })
  @ApiOkResponse({ schema: WORKER_ID_ANSWER })
  async heartbeat(@Param('worker_id') workerId: string): Promise<Envelope<{ worker_id: string }>> {
    await this.workers.heartbeat(workerId);
    return ok({ worker_id: workerId });
  }

  @Access('read')
  @Get()
  @ApiOperation({ summary: 'list workers with health and load' })
  @ApiOkResponse({ type: [WorkerDto] })
  async list(): Promise<Envelope<WorkerDto[]>> {
    return ok((await this.workers.list()).map((x) => toWorkerDto(x.worker, x.inflight, x.health)));
  }

  @Delete(':worker_id')
  @Access('worker')
  @UseGuards(WorkerAuthGuard)
  @ApiSecurity('hmac')
  @ApiOperation({ summary: 'deregister a worker (it is not picked any more)' })
  @ApiOkResponse({ schema: WORKER_ID_ANSWER })
  async remove(@Param('worker_id') workerId: string): Promise<Envelope<{ worker_id: string }>> {
    await this.workers.remove(workerId);
    return ok({ worker_id: workerId });
  }
}
