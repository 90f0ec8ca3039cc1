import { Controller, Get, Header, Inject } from '@nestjs/common';
import { CONSOLE_CONFIG, ConsoleConfig } from './console.config';

const escapeHtml = (s: string): string =>
  s.replace(
    /[&<>"']/g,
    (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c] as string,
  );

/**
 * The TaskConsole. Until its issue lands it serves a page that says so and links the scheduler's
 * Swagger UI, plus /health.
 */
@Controller()
export class ConsoleController {
  constructor(@Inject(CONSOLE_CONFIG) private readonly config: ConsoleConfig) {}

  @Get('health')
  health(): { code: number; message: string; data: { status: string; component: string } } {
    return { code: 0, message: 'ok', data: { status: 'up', component: 'console' } };
  }

  @Get()
  @Header('content-type', 'text/html; charset=utf-8')
  index(): string {
    const docs = escapeHtml(`${this.config.schedulerPublicUrl}/docs`);
    return `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Baton console</title></head>
<body><h1>Baton console</h1><p>The console UI is not built yet. The scheduler's API is at
<a href="${docs}">${docs}</a>.</p></body></html>`;
  }
}
