// Builds the console's single-page app into dist/console-ui, which apps/console serves.
// `npm run build:console` runs it; `npm start` and `npm test` do too.
import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vite';

const here = fileURLToPath(new URL('.', import.meta.url));

export default defineConfig({
  root: here,
  base: '/',
  // No public folder: everything the pages need is imported, so it is hashed and cached.
  publicDir: false,
  build: {
    outDir: fileURLToPath(new URL('../../../dist/console-ui', import.meta.url)),
    emptyOutDir: true,
    sourcemap: true,
    target: 'es2022',
    rolldownOptions: {
      onwarn(warning, warn) {
        // TanStack Query marks its hooks "use client" for server-rendering frameworks; a
        // single-page app has no server components, so the directive means nothing here.
        if (warning.code === 'MODULE_LEVEL_DIRECTIVE') return;
        warn(warning);
      },
    },
  },
  // React's automatic JSX runtime, as tsconfig.json says (no React import in each file).
  oxc: { jsx: { runtime: 'automatic' } },
  server: {
    port: 5173,
    // `vite --config apps/console/ui/vite.config.mjs` while `npm start` runs: the API through it.
    proxy: { '/api': 'http://127.0.0.1:3001' },
  },
});
