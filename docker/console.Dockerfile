# Baton console. Build from the repository root:
#   docker build -f docker/console.Dockerfile -t baton/console .
FROM node:20-bookworm-slim AS build
WORKDIR /src
# better-sqlite3 compiles when no prebuilt binary matches.
RUN apt-get update && apt-get install -y --no-install-recommends python3 make g++ && rm -rf /var/lib/apt/lists/*
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json nest-cli.json ./
COPY apps ./apps
COPY libs ./libs
COPY bin ./bin
# The server (tsc) and its pages (Vite, into dist/console-ui).
RUN npm run build && npm run build:console && npm prune --omit=dev

FROM node:20-bookworm-slim
ENV NODE_ENV=production
WORKDIR /app
COPY --from=build /src/node_modules ./node_modules
COPY --from=build /src/dist ./dist
COPY package.json ./
RUN mkdir -p /app/data /app/.data && chown node:node /app/data /app/.data
USER node
EXPOSE 3001
CMD ["node", "dist/apps/console/src/main.js"]
