# syntax=docker/dockerfile:1
# Build stage: compile TypeScript with the dev dependencies, then drop them.
FROM node:20-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
# A private registry and its CA, when the build is given them, arrive as build
# secrets (`--secret id=npmrc,src=…` and `--secret id=npm_ca,src=…`): mounted for
# this step only, never kept in a layer. Without them npm uses its defaults.
RUN --mount=type=secret,id=npmrc,required=false --mount=type=secret,id=npm_ca,required=false \
    if [ -s /run/secrets/npmrc ]; then export NPM_CONFIG_USERCONFIG=/run/secrets/npmrc; fi; \
    if [ -s /run/secrets/npm_ca ]; then export NPM_CONFIG_CAFILE=/run/secrets/npm_ca; fi; \
    npm ci --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json ./
COPY src ./src
RUN npm run build && npm prune --omit=dev

# Runtime stage: production dependencies and compiled code only, as a non-root user.
FROM node:20-bookworm-slim
ENV NODE_ENV=production \
    GATEHOUSE_CONFIG=/etc/gatehouse/gatehouse.yaml
WORKDIR /app
COPY --from=build --chown=root:root /app/node_modules ./node_modules
COPY --from=build --chown=root:root /app/dist ./dist
COPY package.json ./
# The account page's static files (/account).
COPY public ./public
COPY config/container.yaml /etc/gatehouse/gatehouse.yaml
RUN mkdir -p /var/lib/gatehouse && chown node:node /var/lib/gatehouse
# The config is mounted read-only; users, keys and the journal live on the data volume,
# which `gatehouse users add` and the gateway write as the unprivileged user.
VOLUME ["/etc/gatehouse", "/var/lib/gatehouse"]
USER node
EXPOSE 8080 9090
HEALTHCHECK --interval=10s --timeout=3s --start-period=10s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:9090/healthz', { signal: AbortSignal.timeout(2500) }).then(r => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]
ENTRYPOINT ["node", "dist/main.js"]
CMD ["start"]
