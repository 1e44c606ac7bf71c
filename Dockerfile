# syntax=docker/dockerfile:1
# Switchyard container image: build the npm package from the sources, then run it on a slim Node 24 runtime.
#   docker build -t switchyard .
#   docker run --rm -p 8080:8080 -p 15021:15021 -v "$PWD/conf:/etc/switchyard:ro" switchyard   # conf/config.yaml
# Mount the folder, not the file: a single-file mount keeps the inode the container started with, so edits to it
# never reach the gateway's file watch.

# Stage 1: the packed npm package, exactly what `npm publish` would ship (prepack builds the JavaScript).
FROM node:24-bookworm-slim AS build
WORKDIR /src
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY . .
RUN npm pack --pack-destination /pkg && mv /pkg/switchyard-*.tgz /pkg/switchyard.tgz

# Stage 2: install the package with its production dependencies only.
FROM node:24-bookworm-slim AS install
WORKDIR /opt/switchyard
COPY --from=build /pkg/switchyard.tgz /tmp/switchyard.tgz
RUN npm init -y >/dev/null \
 && npm install --omit=dev --no-audit --no-fund /tmp/switchyard.tgz \
 && npm cache clean --force

# Stage 3: the runtime. No npm cache, no sources, no dev dependencies; runs as the unprivileged `node` user.
FROM node:24-bookworm-slim
# MALLOC_ARENA_MAX, MALLOC_MMAP_THRESHOLD_: glibc's malloc capped at one arena, large blocks always mapped apart (ADR
# 0041, 0052, 0063), which the CLI sets on the re-execution that the ENTRYPOINT below makes unnecessary
# (bin/node-flags.js). `docker run -e MALLOC_ARENA_MAX=…` overrides them.
ENV NODE_ENV=production MALLOC_ARENA_MAX=1 MALLOC_MMAP_THRESHOLD_=131072
# tini as PID 1: it reaps orphaned processes (the lifeline watcher a stdio MCP child leaves when it exits, ADR 0056),
# which node as PID 1 never would, and passes SIGTERM on to the gateway.
RUN apt-get update && apt-get install -y --no-install-recommends tini && rm -rf /var/lib/apt/lists/*
COPY --from=install /opt/switchyard /opt/switchyard
COPY deploy/container/config.yaml /etc/switchyard/config.yaml
USER node
WORKDIR /opt/switchyard
# 8080: the starter config's bind; 15020: Prometheus /metrics; 15021: readiness. The admin port (15000) stays on
# loopback inside the container by design.
EXPOSE 8080 15020 15021
HEALTHCHECK --interval=10s --timeout=3s --start-period=10s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:15021/healthz/ready').then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]
# SIGTERM stops accepting, drains in-flight requests (config.drainTimeout, default 10s) and exits 0.
STOPSIGNAL SIGTERM
# tini first (see above), then the Node options of bin/node-flags.js (the young-generation cap, ADR 0041; Maglev jobs freed in place, ADR 0085) that the CLI would otherwise re-execute
# itself to apply: given here, the start skips that second Node bootstrap (about 100 ms of the time to ready, ADR 0057).
ENTRYPOINT ["/usr/bin/tini", "--", "node", "--max-semi-space-size=2", "--no-maglev-destroy-on-background", "/opt/switchyard/node_modules/switchyard/bin/switchyard.js"]
CMD ["-f", "/etc/switchyard/config.yaml"]
