// The architecture as rules (npm run lint:deps; CI runs it). Dependencies
// flow one way: the lab (bench/, tools/) and cli on top, then the composition root
// (server.ts), transport, service, and the store at the bottom, whose
// engines (SQLite, PostgreSQL) only the store may touch, each one folder
// behind the ports (store/ports/); store/open.ts alone picks one.

/**
 * The transport's own layers, top to bottom: the face (transports.ts) wires
 * the request entry, which hands requests to the RPC and REST paths, which
 * run the stream and unary pipelines, over the cache, over the policy and
 * HTTP plumbing. A module may import its own layer or those below, never
 * one above: not even a type (type-only imports count, tsPreCompilationDeps).
 */
const TRANSPORT_LAYERS = [
  "^src/transport/transports[.]ts$",
  "^src/transport/entry[.]ts$",
  "^src/transport/rpc/",
  "^src/transport/(rest|ops|jetstream)/",
  "^src/transport/(stream|unary)/",
  "^src/transport/cache/",
  "^src/transport/(policy|http)/",
];

/** A module of one of the store's engines, or an engine's driver. */
const ENGINE = "^src/store/(postgres|sqlite)/|(^|/)node_modules/(better-sqlite3|pg|pg-copy-streams)/";

module.exports = {
  forbidden: [
    ...TRANSPORT_LAYERS.slice(1).map((layer, i) => ({
      name: "transport-layers-flow-down",
      comment: "Within the transport, a layer imports only itself and those below it (TRANSPORT_LAYERS), types included: an arrow back up, even a type, ties a lower layer to what is built on it.",
      severity: "error",
      from: { path: layer },
      to: { path: TRANSPORT_LAYERS.slice(0, i + 1).join("|") },
    })),
    {
      name: "composition-roots-open-the-store",
      comment: "Services and transports are handed their store; only a composition root (server.ts, a command, a worker thread's root in threads/, derive's own worker) picks and opens one (store/open.ts).",
      severity: "error",
      from: { path: "^src/(service|transport)/" },
      to: { path: "^src/store/open[.]ts$" },
    },
    {
      name: "services-composed-on-top",
      comment: "service/services.ts composes the services; the services (and the webhooks under them) never import it back, types included: what they share lives below it.",
      severity: "error",
      from: { path: "^src/service/", pathNot: "^src/service/services[.]ts$" },
      to: { path: "^src/service/services[.]ts$" },
    },
    {
      name: "no-cycles",
      comment: "A cycle has no bottom: neither module can be understood, tested or replaced without the other.",
      severity: "error",
      from: { path: "^(src|bench|tools)/" },
      to: { circular: true },
    },
    {
      name: "store-is-the-bottom",
      comment: "The store answers what it is asked; it knows nothing of who asks (services, transports, import, derive, commands).",
      severity: "error",
      from: { path: "^src/store/" },
      to: { path: "^src/(service|transport|ingest|derive|cli|demo|threads)/|^src/server[.]ts$" },
    },
    {
      name: "service-below-transport",
      comment: "Services are protocol-free: every transport calls the same ones, so none may reach up into a transport or a command.",
      severity: "error",
      from: { path: "^src/service/" },
      to: { path: "^src/(transport|cli|threads)/|^src/server[.]ts$" },
    },
    {
      name: "engines-stay-in-the-store",
      comment: "Code outside the store talks to it through its ports, so that either engine serves every path; only the store imports an engine or its driver.",
      severity: "error",
      from: { path: "^src/", pathNot: "^src/store/" },
      to: { path: ENGINE },
    },
    {
      name: "engines-see-only-ports",
      comment: "Each engine is one complete folder behind the ports: it imports the ports, the shared store helpers and the domain, never the other engine or anything above.",
      severity: "error",
      from: { path: "^src/store/(sqlite|postgres)/" },
      to: { path: "^src/", pathNot: "^src/store/(shared)/|^src/store/ports/|^src/domain/|^src/store/$1/" },
    },
    {
      name: "ports-know-only-the-domain",
      comment: "The ports are what the rest of the code sees of the store: they may not take a type from an engine.",
      severity: "error",
      from: { path: "^src/store/(ports|shared)/" },
      to: { path: "^src/", pathNot: "^src/domain/|^src/store/ports/|^src/store/shared/" },
    },
    {
      name: "the-domain-is-the-floor",
      comment: "The domain (row types, formats, wire forms, the record kinds' declarations) is read by every layer, the store's engines included: it imports nothing of the code but itself (and the generated messages), so a declaration never pulls a layer in beneath the store.",
      severity: "error",
      from: { path: "^src/domain/" },
      to: { path: "^src/", pathNot: "^src/domain/" },
    },
    {
      name: "config-is-a-leaf",
      comment: "The settings table and the configuration built from it are read by every layer (defaults, the validated config): they import nothing of the code but the domain, so any layer may take them without a cycle or an arrow up.",
      severity: "error",
      from: { path: "^src/config/" },
      to: { path: "^src/", pathNot: "^src/(config|domain)/" },
    },
    {
      name: "the-lab-is-on-top",
      comment: "Benchmarks (bench/) and drills and build tools (tools/) use the service from outside src/; the service never uses them, so src/ builds and ships without them.",
      severity: "error",
      from: { path: "^src/" },
      to: { path: "^(bench|tools|test)/" },
    },
    {
      name: "client-package-ships-alone",
      comment: "@marketdata/client is installed on its own, in other services and browsers: it may import its own files, its copy of the generated code and its dependencies, never the server's code.",
      severity: "error",
      from: { path: "^packages/client/src/" },
      to: { path: "^(src|test|tools)/" },
    },
    {
      name: "commands-are-on-top",
      comment: "The CLI composes everything below it; nothing below imports a command.",
      severity: "error",
      from: { path: "^src/", pathNot: "^src/(cli|bin)/" },
      to: { path: "^src/cli/" },
    },
  ],
  options: {
    doNotFollow: { path: "node_modules" },
    // Type-only imports count: a port that takes a type from an adapter is a dependency on it.
    tsPreCompilationDeps: true,
    tsConfig: { fileName: "tsconfig.json" },
    enhancedResolveOptions: { exportsFields: ["exports"], conditionNames: ["import", "require", "node", "default"], extensions: [".ts", ".js"] },
    exclude: { path: "^gen/" },
  },
};
