import fastifyStatic from '@fastify/static';
import type { FastifyInstance } from 'fastify';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { PAGES } from '../ui/src/pages';

/** The single-page app's own addresses, from its list of pages: each answers the app, which then reads the URL. */
export const PAGE_ROUTES: readonly string[] = Object.values(PAGES);

const NOT_BUILT = `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Baton console</title></head>
<body><main><h1>Baton console</h1><p>The console's pages are not built. Run
<code>npm run build:console</code> (<code>npm start</code> does it), then reload.</p></main></body></html>`;

/**
 * Serves the built app: hashed files under `/assets/` (kept by browsers for a year, since a new
 * build has new names) and `index.html` at every page's address (always asked again). Without a
 * build, each page says how to make one (503), so the console still starts beside the others.
 * Answers whether the build was found.
 */
export function registerUiPages(app: FastifyInstance, uiDir: string): boolean {
  const indexFile = join(uiDir, 'index.html');
  const built = existsSync(indexFile);
  const index = built ? readFileSync(indexFile, 'utf8') : NOT_BUILT;
  if (built) {
    void app.register(fastifyStatic, {
      root: join(uiDir, 'assets'),
      prefix: '/assets/',
      index: false,
      immutable: true,
      maxAge: '365d',
    });
  }
  for (const url of PAGE_ROUTES) {
    app.get(url, async (_req, reply) =>
      reply
        .code(built ? 200 : 503)
        .type('text/html; charset=utf-8')
        .header('cache-control', 'no-cache')
        .send(index),
    );
  }
  return built;
}
