import { Controller, Get } from '@nestjs/common';
import { ApiExcludeController } from '@nestjs/swagger';

/** Liveness for people and orchestrators; not part of the task contract. */
@ApiExcludeController()
@Controller('health')
export class HealthController {
  @Get()
  health(): { code: number; message: string; data: { status: string } } {
    return { code: 0, message: 'ok', data: { status: 'up' } };
  }
}
