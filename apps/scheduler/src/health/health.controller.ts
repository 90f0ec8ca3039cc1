import { Controller, Get } from '@nestjs/common';
import { ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import { HealthCheckResult, HealthCheckService } from '@nestjs/terminus';
import { ContractErrorCode, ContractException } from '@baton/task-contract';
import { ApiErrors, Lifecycle } from '../common';
import { BackendHealth } from './backend-health';
import { Access } from '../auth';

type Answer<T> = { code: number; message: string; data: T };

const LIVE = {
  type: 'object',
  required: ['status', 'component'],
  properties: { status: { type: 'string', enum: ['up'] }, component: { type: 'string' } },
};
const READY = {
  type: 'object',
  required: ['status', 'details'],
  properties: {
    status: { type: 'string', enum: ['ok'] },
    details: {
      type: 'object',
      description: 'per backend (database, queue, locks): `{status: "up"}`',
      additionalProperties: { type: 'object', additionalProperties: true },
    },
  },
  additionalProperties: true,
};

@ApiTags('health')
@Access('public')
@Controller('health')
export class HealthController {
  constructor(
    private readonly checks: HealthCheckService,
    private readonly backends: BackendHealth,
    private readonly lifecycle: Lifecycle,
  ) {}

  @Get()
  @ApiOperation({ summary: 'liveness (the same as /health/live)' })
  @ApiOkResponse({ schema: LIVE })
  health(): Answer<{ status: string; component: string }> {
    return this.live();
  }

  @Get('live')
  @ApiOperation({ summary: 'liveness: the process answers (a Kubernetes liveness probe)' })
  @ApiOkResponse({ schema: LIVE })
  live(): Answer<{ status: string; component: string }> {
    return { code: 0, message: 'ok', data: { status: 'up', component: 'scheduler' } };
  }

  @Get('ready')
  @ApiOperation({
    summary: 'readiness: database (migrations applied), queue and lock backend answer now',
    description:
      'For a Kubernetes readiness probe. 200 with each backend `up`, or 503 (code 50301) naming the ones that are down; each backend is given 2 s. ' +
      'Also 503 from the moment the process is shutting down (SIGTERM), while it still answers the requests under way.',
  })
  @ApiOkResponse({ schema: READY })
  @ApiErrors(ContractErrorCode.NOT_READY)
  async ready(): Promise<Answer<HealthCheckResult>> {
    if (this.lifecycle.draining)
      throw new ContractException(ContractErrorCode.NOT_READY, 'not ready: shutting down', {
        status: 'shutting_down',
      });
    const result = await this.checks
      .check([
        () => this.backends.database(),
        () => this.backends.queue(),
        () => this.backends.locks(),
      ])
      .catch((err: unknown) => {
        const response = (err as { getResponse?: () => unknown }).getResponse?.();
        if (response && typeof response === 'object' && 'details' in response)
          return response as HealthCheckResult;
        throw err;
      });
    if (result.status !== 'ok') {
      const down = Object.keys(result.error ?? {});
      throw new ContractException(
        ContractErrorCode.NOT_READY,
        `not ready: ${down.join(', ')} down`,
        result,
      );
    }
    return { code: 0, message: 'ok', data: result };
  }
}
