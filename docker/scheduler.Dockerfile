# Baton scheduler. Build from the repository root:
#   docker build -f docker/scheduler.Dockerfile -t baton/scheduler .
FROM node:24-bookworm-slim AS build
WORKDIR /src
# No compiler: the SQLite binding ships prebuilt (N-API) in its package, and no install script runs.
COPY package.json package-lock.json ./
# The stub that package.json's overrides point at (msgpackr's optional native speed-up, left out).
COPY tools/stubs ./tools/stubs
RUN npm ci --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json nest-cli.json ./
COPY apps ./apps
COPY libs ./libs
COPY bin ./bin
RUN npm run build && npm prune --omit=dev

FROM node:24-bookworm-slim
ENV NODE_ENV=production
WORKDIR /app
COPY --from=build /src/node_modules ./node_modules
COPY --from=build /src/dist ./dist
COPY package.json ./
RUN mkdir -p /app/data /app/.data && chown node:node /app/data /app/.data
USER node
EXPOSE 3000
# A 32 MB young generation: per-task garbage dies young (docs/operations.md).
CMD ["node", "--max-semi-space-size=32", "--heap-growing-percent=50", "dist/apps/scheduler/src/main.js"]
