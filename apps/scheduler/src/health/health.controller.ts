import { Controller, Get } from '@nestjs/common';
import { ApiOperation, ApiTags } from '@nestjs/swagger';

@ApiTags('health')
@Controller('health')
export class HealthController {
  @Get()
  @ApiOperation({ summary: 'liveness' })
  health(): { code: number; message: string; data: { status: string; component: string } } {
    return { code: 0, message: 'ok', data: { status: 'up', component: 'scheduler' } };
  }
}
