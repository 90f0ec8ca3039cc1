import { Controller, Get } from '@nestjs/common';

/** The console's own probe; the pages and `/api/*` are served beside it (main.ts). */
@Controller()
export class ConsoleController {
  @Get('health')
  health(): { code: number; message: string; data: { status: string; component: string } } {
    return { code: 0, message: 'ok', data: { status: 'up', component: 'console' } };
  }
}
