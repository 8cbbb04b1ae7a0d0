# Tollgate's container image. Build: `docker build -t tollgate .`; run: `docker run -p 8080:8080 -v tollgate-data:/var/lib/tollgate tollgate`.

# Build stage: every dependency (the build needs TypeScript and vite), the server compiled to dist/ and the
# dashboard to web/dist, then the dev dependencies pruned away.
FROM node:24-bookworm-slim AS build
WORKDIR /src
COPY package.json package-lock.json ./
# No install scripts: the `node` dev dependency would fetch a second Node, and `prepare` would build before
# the sources are copied in.
RUN npm ci --ignore-scripts --no-audit --no-fund
COPY . .
RUN npm run build && npm prune --omit=dev --ignore-scripts --no-audit --no-fund

# Run stage: Node, tini, the built server and dashboard, the production dependencies; no npm step, no sources.
FROM node:24-bookworm-slim
# tini as PID 1 forwards SIGTERM to Tollgate, which drains (up to 30 s), and reaps whatever it leaves behind.
RUN apt-get update \
  && apt-get install -y --no-install-recommends tini \
  && apt-get clean && rm -rf /var/lib/apt/lists/* \
  && useradd --system --uid 10001 --user-group --home-dir /var/lib/tollgate --shell /usr/sbin/nologin tollgate \
  && install -d -o tollgate -g tollgate -m 0700 /var/lib/tollgate \
  && install -d -m 0755 /etc/tollgate
WORKDIR /app
COPY --from=build /src/package.json ./
COPY --from=build /src/bin ./bin
COPY --from=build /src/dist ./dist
COPY --from=build /src/web/dist ./web/dist
COPY --from=build /src/node_modules ./node_modules
RUN ln -s /app/bin/tollgate.js /usr/local/bin/tollgate

# Configuration by environment; the YAML file (models, deployments, plans) is mounted at /etc/tollgate and named
# with TOLLGATE_CONFIG=/etc/tollgate/tollgate.yaml. The embedded store lives in the volume.
ENV PORT=8080 \
    HOST=0.0.0.0 \
    DATABASE_URL=sqlite:/var/lib/tollgate/tollgate.db \
    MALLOC_ARENA_MAX=2
VOLUME ["/var/lib/tollgate"]
EXPOSE 8080
USER 10001:10001
# Relative paths (the settlement spool that PostgreSQL deployments keep under ./data) land in the volume too.
WORKDIR /var/lib/tollgate

# Liveness only: /health answers 200 while the process serves (also when Redis is away: degraded) and 503
# when the database is unreachable. Node's own fetch: the image has no curl.
HEALTHCHECK --interval=15s --timeout=3s --start-period=20s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:'+(process.env.PORT||8080)+'/health').then(r=>process.exit(r.ok?0:1),()=>process.exit(1))"]

ENTRYPOINT ["/usr/bin/tini", "--"]
# The V8 flags of `npm start` (docs/decisions.md, "V8's heap under 10,000 open streams").
CMD ["node", "--max-semi-space-size=4", "--heap-growing-percent=50", "/app/dist/main.js"]
