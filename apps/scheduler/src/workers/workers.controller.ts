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
import { ContractErrorCode, Envelope, WorkerAuthGuard, ok } from '@baton/task-contract';
import { ApiErrors, Clock } from '../common';
import {
  BlacklistWorkerDto,
  RegisterWorkerDto,
  RegisteredWorkerDto,
  WorkerDto,
  toWorkerDto,
} from './dto/worker.dto';
import { WorkerControl } from './worker-control';
import { WorkerView, WorkersService } from './workers.service';
import { Access, AllTenants, Audited } from '../auth';

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
    private readonly control: WorkerControl,
    private readonly clock: Clock,
  ) {}

  private dto(v: WorkerView): WorkerDto {
    return toWorkerDto(v.worker, v.inflight, v.health, v.excluded, this.clock.now());
  }

  @Post()
  @HttpCode(200)
  @Access('worker')
  @UseGuards(WorkerAuthGuard)
  @ApiSecurity('hmac')
  @ApiOperation({
    summary: 'register (or re-register) a worker instance and the task types it serves',
    description:
      'A worker names the worker contract it speaks (`contract_version`; absent: 1.0.0). One older than the scheduler accepts (BATON_MIN_WORKER_CONTRACT, 1.1.0 unless set) is refused with 409 (40905), counted in `baton_worker_registrations_refused_total{reason="contract_version"}`, and takes no task.',
  })
  @ApiOkResponse({ type: RegisteredWorkerDto })
  @ApiErrors(ContractErrorCode.CONTRACT_VERSION_UNSUPPORTED)
  async register(@Body() dto: RegisterWorkerDto): Promise<Envelope<RegisteredWorkerDto>> {
    const view = await this.workers.register(dto);
    return ok({ ...this.dto(view), timing: await this.workers.timing(view.worker.taskTypes) });
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
  @ApiOperation({
    summary:
      'list workers with health, load, drain and blacklist, and why each is left out of a type',
  })
  @ApiOkResponse({ type: [WorkerDto] })
  async list(): Promise<Envelope<WorkerDto[]>> {
    return ok((await this.workers.list()).map((v) => this.dto(v)));
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

  @Post(':worker_id/drain')
  @HttpCode(200)
  @Access('operate')
  @AllTenants()
  @Audited('worker.drain', 'worker_id')
  @ApiOperation({
    summary:
      'drain a worker: no new tasks go to it, the tasks it has finish there; it stays drained when it registers again',
  })
  @ApiOkResponse({ type: WorkerDto })
  async drain(@Param('worker_id') workerId: string): Promise<Envelope<WorkerDto>> {
    return ok(this.dto(await this.control.drain(workerId)));
  }

  @Delete(':worker_id/drain')
  @Access('operate')
  @AllTenants()
  @Audited('worker.undrain', 'worker_id')
  @ApiOperation({ summary: 'end the drain of a worker: it takes new tasks again' })
  @ApiOkResponse({ type: WorkerDto })
  async undrain(@Param('worker_id') workerId: string): Promise<Envelope<WorkerDto>> {
    return ok(this.dto(await this.control.undrain(workerId)));
  }

  @Post(':worker_id/blacklist')
  @HttpCode(200)
  @Access('operate')
  @AllTenants()
  @Audited('worker.blacklist', 'worker_id')
  @ApiOperation({
    summary:
      'blacklist a worker by hand, with a reason, until a time or until lifted: it gets no tasks; the tasks it runs finish there',
  })
  @ApiOkResponse({ type: WorkerDto })
  async blacklist(
    @Param('worker_id') workerId: string,
    @Body() dto: BlacklistWorkerDto,
  ): Promise<Envelope<WorkerDto>> {
    const until = dto.until ? Date.parse(dto.until) : null;
    return ok(this.dto(await this.control.blacklist(workerId, dto.reason, until)));
  }

  @Delete(':worker_id/blacklist')
  @Access('operate')
  @AllTenants()
  @Audited('worker.unblacklist', 'worker_id')
  @ApiOperation({
    summary: "lift a worker's blacklist, by hand or after call failures: it takes tasks again",
  })
  @ApiOkResponse({ type: WorkerDto })
  async unblacklist(@Param('worker_id') workerId: string): Promise<Envelope<WorkerDto>> {
    return ok(this.dto(await this.control.lift(workerId)));
  }
}
