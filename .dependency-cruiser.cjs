/**
 * The layers of src/, bottom to top, and the rules that keep them (issue 21).
 *
 * Read the table below first: it is the map of the code. Each entry is a folder (or a single file)
 * with the layer it sits in and its job. The one rule behind all the others:
 *
 *   A module may import its own folder and the layers BELOW its own, nothing above.
 *   Two folders in the SAME layer do not import each other, unless the table says `mayImport`.
 *
 * Type-only imports (`import type …`) count too: a type names a layer just as a value does.
 * Anything in src/ that is not in the table is refused as an import target and flagged as unplaced:
 * a new folder gets a row here before it gets callers.
 *
 * `npm run lint` runs `depcruise src --config .dependency-cruiser.cjs`; test/lint/layers-rule.test.ts
 * proves that an upward import fails. The layer table of docs/architecture.md is generated from LAYERS
 * (`npm run docs:layers`; the lint fails when it is stale). To see the graph:
 * `npx depcruise src --config .dependency-cruiser.cjs --output-type text --collapse '^src/[^/]+'`.
 */

/** @type {Array<{ layer: number; name: string; path: string; job: string; mayImport?: string[] }>} */
const LAYERS = [
  // L0: the vocabulary and the disk, importing nothing of ours.
  { layer: 0, name: 'core', path: 'src/core/', job: 'error catalogue, $diagnoses, the principal: words every layer speaks; imports nothing of ours' },
  { layer: 0, name: 'files', path: 'src/files/', job: 'atomic writes and watched files; imports nothing of ours' },

  // L1: what a config looks like, and HTTP without any policy.
  { layer: 1, name: 'config', path: 'src/config/', job: 'schema shapes, their types and defaults (reading a file from disk is config-load, L8)' },
  {
    layer: 1,
    name: 'http',
    path: 'src/http/',
    job: 'JSON bodies, draining, the paths the gateway keeps for itself, error responses, the client address',
    mayImport: ['config'],
  },

  // L2: where state lives, and where a request goes. Neither needs the other.
  { layer: 2, name: 'store', path: 'src/store/', job: 'sessions, keys and records, in memory or in Redis: the only holder of a Redis client' },
  { layer: 2, name: 'routing', path: 'src/routing/', job: 'the route table, the request target, reading a path' },
  {
    layer: 2,
    name: 'audit',
    path: 'src/audit/',
    job: 'the audit trail: entries, their hash chain and checkpoints, appending off the request path, verify and list',
    mayImport: ['store'],
  },

  // L3: who a user is, then the tokens that carry it.
  { layer: 3, name: 'users', path: 'src/users/', job: 'local users, passwords and API keys, and the IdentityProvider seam every identity provider answers' },
  { layer: 3, name: 'tokens', path: 'src/tokens/', job: 'signing keys, issuing and verifying tokens, JWKS, the signed assertion for backends', mayImport: ['users'] },

  // L4: watching and bounding the traffic.
  { layer: 4, name: 'observability', path: 'src/observability/', job: 'logs, metrics, traces, request ids' },
  { layer: 4, name: 'limits', path: 'src/limits/', job: 'rate limits, login throttling, body and deadline guards, fair queues', mayImport: ['observability'] },
  { layer: 4, name: 'factors', path: 'src/factors/', job: 'second factors of local users: TOTP and recovery codes, enrolment, used codes through the store' },
  { layer: 4, name: 'dpop', path: 'src/dpop/', job: 'DPoP (RFC 9449) proofs: their checks, the URL the client saw, the replay memory through the store' },

  // L5, L6: authentication with our own tokens, then fronting an OpenID Provider on top of it.
  { layer: 5, name: 'auth', path: 'src/auth/', job: 'login, refresh, logout, bearer checks, the token endpoint' },
  { layer: 6, name: 'oidc', path: 'src/oidc/', job: 'an OpenID Provider as the identity source: its tokens, introspection, client auth' },
  {
    layer: 6,
    name: 'providers',
    path: 'src/providers/',
    job: 'several identity providers at once: the provider of a token by its issuer, of a login by name',
    mayImport: ['oidc'],
  },

  // L7: the proxy, and the plug-ins it is extended with. The proxy declares what it asks of a plug-in
  // (RouteGuard, AcceptedAnswer …) and never imports one; plug-ins import the proxy, never each other.
  { layer: 7, name: 'proxy', path: 'src/proxy/', job: 'forwarding HTTP and WebSocket upstream: admission, headers, pools, engines' },
  { layer: 7, name: 'authz', path: 'src/authz/', job: 'plug-in: route rules (roles, groups) checked before forwarding', mayImport: ['proxy'] },
  { layer: 7, name: 'async-requests', path: 'src/async-requests/', job: 'plug-in: asynchronous requests (202 capture, status, journal)', mayImport: ['proxy'] },
  { layer: 7, name: 'account', path: 'src/account/', job: 'plug-in: the account page and API (sessions, own API keys)', mayImport: ['proxy'] },
  { layer: 7, name: 'cors', path: 'src/cors/', job: 'plug-in: CORS policy for browsers', mayImport: ['proxy'] },

  // L8: putting a process around it: listeners and health, loading and reloading the config file.
  { layer: 8, name: 'server', path: 'src/server/', job: 'listeners, health, the metrics route' },
  { layer: 8, name: 'config-load', path: 'src/config-load/', job: 'reading, checking, watching and reloading the config file and environment' },

  // L9: the composition root: the one place that knows every part and builds them, stage by stage.
  { layer: 9, name: 'app', path: 'src/app/', job: 'the composition root: builds the gateway from a config, one module per stage' },

  // L10: the command line, the entry point.
  { layer: 10, name: 'cli', path: 'src/cli/', job: 'the gatehouse commands (start, users, keys, apikeys, check-config)' },
  { layer: 10, name: 'main', path: 'src/main.ts', job: 'the executable', mayImport: ['cli'] },
];

/** `src/core/` → `^src/core/`, `src/app.ts` → `^src/app\.ts$` */
const pattern = (path) => (path.endsWith('/') ? `^${path}` : `^${path.replace(/\./g, '\\.')}$`);
const anyOf = (entries) => entries.map((entry) => pattern(entry.path));

const layerRules = LAYERS.map((entry) => {
  const allowed = LAYERS.filter((other) => other.layer < entry.layer || other === entry || (entry.mayImport ?? []).includes(other.name));
  return {
    name: `layer-${entry.name}`,
    severity: 'error',
    comment: `${entry.path} is L${entry.layer} (${entry.job}). It may import only: ${allowed.map((other) => other.name).join(', ')}.`,
    from: { path: pattern(entry.path) },
    // Everything in src/ outside the allowed set, whether in the table or not.
    to: { path: '^src/', pathNot: anyOf(allowed) },
  };
});

/** @type {import('dependency-cruiser').IConfiguration} */
module.exports = {
  forbidden: [
    ...layerRules,
    {
      name: 'layer-unplaced',
      severity: 'error',
      comment: 'This module of src/ is in no layer: give its folder a row in LAYERS (.dependency-cruiser.cjs) before it imports or is imported.',
      from: { path: '^src/', pathNot: anyOf(LAYERS) },
      to: { path: '^src/' },
    },
    {
      name: 'no-circular',
      severity: 'error',
      comment: 'Files that import each other, directly or round a loop: split out what both need, or let one side declare an interface.',
      from: {},
      to: { circular: true },
    },
    {
      name: 'redis-only-in-store',
      severity: 'error',
      comment: 'Nothing outside store/ holds a raw Redis client: ask the store (src/store/) for the operation instead of importing ioredis.',
      from: { path: '^src/', pathNot: '^src/store/' },
      // Resolved into node_modules, or (in a tree without it installed) left as the bare name.
      to: { path: ['(^|/)node_modules/ioredis/', '^ioredis$'] },
    },
  ],
  options: {
    // Type-only imports count: `import type { Store }` in core/ ties core to store just as a value would.
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    moduleSystems: ['es6'],
    doNotFollow: { path: 'node_modules' },
    enhancedResolveOptions: {
      exportsFields: ['exports'],
      conditionNames: ['import', 'require', 'node', 'default', 'types'],
      mainFields: ['module', 'main', 'types', 'typings'],
    },
    // A second `npm run lint` reads only the files that changed.
    cache: { folder: 'node_modules/.cache/dependency-cruiser', strategy: 'content' },
  },
};

// For scripts/layer-table.ts. Not enumerable: dependency-cruiser refuses a config key it does not know.
Object.defineProperty(module.exports, 'LAYERS', { value: LAYERS, enumerable: false });
