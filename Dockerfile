# The service's image: `docker build -t project-collaboration-service .` (docker-compose.yml builds it too).
# Two stages: the production dependencies are installed from the lockfile in the first; the second holds them and
# the source, and runs as the image's unprivileged `bun` user.

FROM oven/bun:1.4.5 AS dependencies
WORKDIR /app
COPY package.json bun.lock ./
RUN bun install --frozen-lockfile --production

FROM oven/bun:1.4.5 AS service
WORKDIR /app
ENV NODE_ENV=production
COPY --from=dependencies /app/node_modules ./node_modules
# Everything the server reads at run time: src/, and dashboard/ (built by Bun's bundler on the first dashboard
# request); bunfig.toml keeps `bun run cli …` free of the runner's own line. test/e2e/image.test.ts builds this file
# set from these COPY lines and serves the dashboard, /docs and the OpenAPI document from it.
COPY package.json bun.lock tsconfig.json bunfig.toml ./
COPY src ./src
COPY dashboard ./dashboard
# SQLite's default file (./data/service.sqlite) lives here when DATABASE_URL is unset.
RUN mkdir -p /app/data && chown bun:bun /app/data
VOLUME ["/app/data"]
USER bun
ENV HOST=0.0.0.0 PORT=3000
EXPOSE 3000
HEALTHCHECK --interval=10s --timeout=3s --retries=5 \
  CMD ["bun", "-e", "const r = await fetch('http://127.0.0.1:' + (process.env.PORT ?? '3000') + '/health/ready'); process.exit(r.ok ? 0 : 1)"]
# Exec form: bun is PID 1 and receives SIGTERM itself, so `docker stop` drains requests (SHUTDOWN_TIMEOUT) and exits.
CMD ["bun", "src/main.ts"]
