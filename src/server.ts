import type http from "node:http";
import { type ConnectRouter, createContextValues } from "@connectrpc/connect";
import { connectNodeAdapter } from "@connectrpc/connect-node";
import Fastify, { type FastifyBaseLogger, type FastifyInstance, LogController } from "fastify";
import { pino, type Logger } from "pino";
import { createLogger } from "./log.js";
import { API_LISTENER, listenError } from "./listen-errors.js";
import { ConfigError } from "./config/checks.js";
import { DEFAULT_TIMEOUTS, DRAIN_MS, resolveWebhooks, type ServeConfig, type Timeouts } from "./config/serve.js";
import { DEFAULTS } from "./config/settings.js";
import { ADMIN_PROCEDURES, createServices, INGEST_PROCEDURES, readOnlyUnaryMethods, serverStreamingMethods, type WebhookDeps } from "./service/services.js";
import { FeedHub, type FeedLimits } from "./service/feed-hub.js";
import { streamCaller } from "./service/watch.js";
import { admitNextBatch } from "./service/ingest-service.js";
import { MAX_BATCH_BYTES } from "./domain/ingest-limits.js";
import { IngestService } from "../gen/marketdata/v1/ingest_service_pb.js";
import { WebhookService } from "../gen/marketdata/v1/webhook_service_pb.js";
import { startWebhooks, type WebhookSettings } from "./service/webhooks/runtime.js";
import { apiPortMetrics, type CountedLimits, countedLimits, publishMetrics } from "./counts.js";
import { openIngestWriter, openReadRepositories, openWebhookStore } from "./store/open.js";
import { refreshAfterWrites } from "./derive/refresh-thread.js";
import type { RefreshReply } from "./derive/refresh-worker.js";
import type { ReadRepositories } from "./store/ports/reads.js";
import type { IngestWriter } from "./store/ports/writes.js";
import { registerConnectGetRoutes } from "./transport/rpc/connect-get.js";
import { DualProtocolServer, type RequestHandler } from "./transport/http/dual-protocol-server.js";
import { createGrpcUnaryHandler } from "./transport/rpc/grpc-unary.js";
import { createGrpcStreamHandler } from "./transport/rpc/grpc-stream.js";
import { jsonMessageText } from "./transport/rpc/json-text.js";
import { Admission, addressLimited } from "./transport/policy/admission.js";
import { ClientAddresses } from "./transport/policy/client-address.js";
import { observeRoutes, requestEntry } from "./transport/entry.js";
import { PUBLIC_SERVICES } from "./transport/policy/public-services.js";
import { registerNotFound } from "./transport/http/not-found.js";
import { MAX_REQUEST_MESSAGE_BYTES } from "./transport/rpc/body.js";
import { registerMetricsEndpoint, ServerMetrics } from "./transport/ops/metrics.js";
import { type AdmittedRequest, createRpcGate } from "./transport/rpc/gate.js";
import { corsPolicy } from "./transport/http/cors.js";
import { registerDocs } from "./transport/ops/docs.js";
import { DataVersionWatch, MemoizedKeyVerifier, ResponseCache } from "./transport/cache/freshness.js";
import { HeldKeys, type HoldKey, KEY_REVOKED } from "./transport/policy/held-keys.js";
import type { KeyVerifier } from "./transport/policy/guards.js";
import { requestLogger, rpcInterceptors, streamOutcome } from "./transport/rpc/interceptors.js";
import { streamOutcomes } from "./transport/stream/pipeline.js";
import { type RawGet, registerRestRoutes, successFlags } from "./transport/rest/transcoder.js";
import { registerIngestRoutes } from "./transport/rest/ingest.js";
import { registerSseRoutes } from "./transport/rest/sse.js";
import { sseRoutes } from "./transport/rest/http-rules.js";
import { cachedReadiness, healthRoutes, Lifecycle, registerHealthEndpoints } from "./transport/ops/health.js";
import { reflectionRoutes } from "./transport/ops/reflection.js";
import { Health } from "../gen/health/v1/health_pb.js";

// The composition root: the one place where store, services and transports
// are wired together, for the CLI and the tests alike.

export interface ServerDeps {
  store: ReadRepositories;
  /** Where the ingest API writes; absent: every write is refused (failed_precondition). */
  writer?: IngestWriter;
  /** The key check; the store's own keys repository when absent. */
  keys?: KeyVerifier;
  /** Request and error logging; silent when absent. */
  logger?: Logger;
  /** Response cache size in bytes; 0 turns it off. Default: --cache-mb's. */
  cacheBytes?: number;
  /** Per-key and per-address request limits, where they are counted and how that store fares (counts.ts); keys' own limits only when absent. */
  rateLimits?: Omit<CountedLimits, "close">;
  /** Connection timeouts and the shutdown deadline; DEFAULT_TIMEOUTS when absent. */
  timeouts?: Timeouts;
  /** On close, how long idle keep-alive connections may still send a request (ms). */
  drainMs?: number;
  /** Prometheus metrics: "route" serves GET /metrics on this port; "off" collects nothing; "collect" collects for another listener (--metrics-port). Default "route". */
  metrics?: "route" | "off" | "collect";
  /** Origins allowed to call from a browser ("*" for any); none: CORS off. */
  corsOrigins?: readonly string[];
  /** Proxies (addresses, CIDR blocks) whose X-Forwarded-For names the client; none: the TCP peer is the client. */
  trustProxy?: readonly string[];
  /** Open live-feed streams allowed per key and in all; the defaults of feed-limits.ts for what is absent. */
  streamLimits?: FeedLimits;
  /** How often the live feeds ask the store for commits (ms); FEED_POLL_MS when absent. */
  feedPollMs?: number;
  /** Messages a feed subscriber may fall behind before it is ended as too slow; MAX_QUEUED_MESSAGES when absent (tests lower it). */
  feedMaxQueued?: number;
  /** Rows per feed read, live or replaying; FEED_PAGE_ROWS when absent (tests lower it to page through small backlogs). */
  feedPageRows?: number;
  /** How far past the clock an ingested sale's or listing's time may be (seconds); the default when absent. */
  maxClockSkewSeconds?: number;
  /** Webhook administration and this process's deliveries; absent: WebhookService answers unimplemented. */
  webhooks?: WebhookDeps;
}

export interface BuiltServer {
  app: FastifyInstance;
  cache: ResponseCache;
  /** Absent when metrics are off. */
  metrics?: ServerMetrics;
}

const MIB = 1024 * 1024;

/**
 * The whole service as a Fastify instance, not yet listening, on one port:
 * REST /v1 and Connect GET through Fastify (in-process calls, cached);
 * Connect POST, gRPC-Web and gRPC (HTTP/2 prior knowledge) straight to
 * connect-node's handler, which skips Fastify's routing and hooks: those
 * requests never reach a Fastify route anyway.
 */
export async function buildServer(deps: ServerDeps): Promise<BuiltServer> {
  const log = deps.logger ?? pino({ level: "silent" });
  const watch = new DataVersionWatch(deps.store.info);
  const keys = new MemoizedKeyVerifier(deps.keys ?? deps.store.keys, watch);
  const cache = new ResponseCache(deps.cacheBytes ?? DEFAULTS.cacheMb * MIB, watch);
  const feeds = new FeedHub(deps.store, deps.streamLimits, {
    ...(deps.feedPollMs === undefined ? {} : { pollMs: deps.feedPollMs }),
    ...(deps.feedMaxQueued === undefined ? {} : { maxQueued: deps.feedMaxQueued }),
    ...(deps.feedPageRows === undefined ? {} : { pageRows: deps.feedPageRows }),
  });
  const services = createServices(
    deps.store,
    deps.writer,
    feeds,
    deps.maxClockSkewSeconds === undefined ? {} : { maxClockSkewSeconds: deps.maxClockSkewSeconds },
    deps.webhooks,
  );
  // A key revoked while it holds live feeds open ends them (the ingest streams: at their next message).
  const heldKeys = new HeldKeys(keys, watch);
  const holdKey: HoldKey = (key, grant) => heldKeys.hold(key, grant.id, () => feeds.endKey(grant.id, KEY_REVOKED));
  const interceptors = rpcInterceptors(keys, log);
  const admission = new Admission(keys, deps.rateLimits?.limits);
  const addresses = new ClientAddresses(deps.trustProxy);
  const guard = addressLimited(admission, addresses);
  const lifecycle = new Lifecycle();
  lifecycle.onShutdown(() => admission.close());
  // Every live feed ends at once with its resume position, well before the shutdown deadline.
  lifecycle.onShutdown(() => feeds.close());
  const readiness = cachedReadiness(() => storeNotReadyReason(deps.store), lifecycle, deps.rateLimits?.degraded);
  const restFlags = successFlags(services);
  // Health and reflection: every RPC protocol, no API key (policy/public-services.ts).
  const publicProcedures = new Set(PUBLIC_SERVICES.flatMap((s) => s.methods.map((m) => `/${s.typeName}/${m.name}`)));
  const metricsMode = deps.metrics ?? "route";
  const metrics =
    metricsMode === "off"
      ? undefined
      : new ServerMetrics({
          cache,
          rateLimited: admission.refused,
          keyLookups: keys,
          store: deps.store.info,
          feeds: feeds.stats,
          ...(deps.webhooks === undefined ? {} : { webhooks: deps.webhooks.stats }),
          ...(deps.rateLimits?.fallbacks === undefined ? {} : { rateLimitFallbacks: deps.rateLimits.fallbacks }),
        });
  const t = deps.timeouts ?? DEFAULT_TIMEOUTS;
  const grpcUnary = createGrpcUnaryHandler({ services, admission, cache, watch, addresses, log, readMaxBytes: MAX_REQUEST_MESSAGE_BYTES });
  const grpcStream = createGrpcStreamHandler({ services, admission, addresses, log, readMaxBytes: MAX_REQUEST_MESSAGE_BYTES, stallMs: t.idleMs, holdKey });
  const streams = serverStreamingMethods(services.services);
  const inputs = new Map(
    [...readOnlyUnaryMethods(services.services), ...streams].map(({ method, procedure }) => [procedure, method.input] as const),
  );
  // The operator's calls (WebhookService) ride the writes' path: admitted as writes, never cached.
  const ingestInputs = new Map(
    [IngestService, WebhookService].flatMap((service) =>
      service.methods.filter((m) => m.methodKind === "unary").map((m) => [`/${service.typeName}/${m.name}`, m.input] as const),
    ),
  );
  const writeProcedures = new Set([...INGEST_PROCEDURES, ...ADMIN_PROCEDURES]);
  const feedProcedures = new Set(streams.map((m) => m.procedure));
  const ingestStreams = new Set(
    IngestService.methods.filter((m) => m.methodKind === "client_streaming").map((m) => `/${IngestService.typeName}/${m.name}`),
  );
  let nextRpcId = 0;
  // One counter for every HTTP request that is not an RPC, whether Fastify
  // or the raw GET path (entry.ts) answers it: their log lines never share an id.
  let nextHttpId = 0;
  const nextReqId = () => `req-${++nextHttpId}`;
  const rawGets = new Map<string, RawGet>();

  const app = Fastify({
    loggerInstance: log as FastifyBaseLogger,
    // One line per request (onResponse below), not Fastify's two.
    logController: new LogController({ disableRequestLogging: true }),
    genReqId: nextReqId,
    // Fastify's types know one server kind; this one serves HTTP/1.1 and h2c.
    serverFactory: (fastifyHandler) => {
      const routes = (router: ConnectRouter) => {
        services.routes(router);
        healthRoutes(router, services.services.map((s) => s.typeName), readiness, lifecycle);
        reflectionRoutes(router, [...services.services, Health]);
      };
      const adapter = {
        routes,
        interceptors,
        // Unknown fields are refused, as REST refuses unknown parameters:
        // a misspelt filter must not silently return unfiltered data. A JSON
        // body that is not UTF-8, or nests deeper than any message can, is
        // refused (invalid_argument) before it is parsed (rpc/json-text.ts;
        // binary messages: protobuf-es checks proto3 strings itself).
        jsonOptions: { ignoreUnknownFields: false, textDecoder: jsonMessageText } as { ignoreUnknownFields: boolean },
        // Responses are at most tens of KB: gzip costs more CPU than it saves
        // on the networks a self-hosted service runs on. Compressed requests
        // are still accepted.
        compressMinBytes: MIB,
        contextValues: (req: unknown) => {
          const reqId = `rpc-${++nextRpcId}`;
          (req as { reqId?: string }).reqId = reqId;
          const values = createContextValues()
            .set(requestLogger, log.child({ reqId }))
            .set(streamCaller, (req as AdmittedRequest).grant?.id)
            .set(admitNextBatch, (req as AdmittedRequest).admitNextBatch);
          if (feedProcedures.has((req as { url?: string }).url ?? "")) {
            // Its request log line says how many messages the stream sent (entry.ts).
            const outcome = { messages: 0 };
            streamOutcomes.set(req as object, outcome);
            values.set(streamOutcome, outcome);
          }
          return values;
        },
      };
      const rpc = connectNodeAdapter({
        ...adapter,
        readMaxBytes: MAX_REQUEST_MESSAGE_BYTES,
        fallback: fastifyHandler as unknown as NonNullable<Parameters<typeof connectNodeAdapter>[0]["fallback"]>,
      });
      // The writes' own handler: the same routes, reading messages up to a
      // batch's size; the gate hands it the IngestService procedures only.
      const ingestRpc = connectNodeAdapter({ ...adapter, readMaxBytes: MAX_BATCH_BYTES });
      const gate = createRpcGate({
        admission,
        inputs,
        publicProcedures,
        grpcUnary,
        grpcStream,
        connectNode: rpc as RequestHandler,
        admin: ADMIN_PROCEDURES,
        ingest: { procedures: writeProcedures, inputs: ingestInputs, streams: ingestStreams, maxBytes: MAX_BATCH_BYTES, connectNode: ingestRpc as RequestHandler },
        feeds: feedProcedures,
        holdKey,
        log,
        addresses,
      });
      const handler = requestEntry({
        cors: corsPolicy(deps.corsOrigins ?? []),
        restFlags,
        fastify: fastifyHandler as RequestHandler,
        gate,
        log,
        metrics,
        known: (procedure) => inputs.has(procedure) || writeProcedures.has(procedure) || publicProcedures.has(procedure),
        rawGets,
        nextReqId,
      });
      return new DualProtocolServer(handler, {
        headersMs: t.headersMs,
        requestMs: t.requestMs,
        keepAliveMs: t.keepAliveMs,
        idleMs: t.idleMs,
        shutdownMs: t.shutdownMs,
        drainMs: deps.drainMs ?? DRAIN_MS,
        // Streams that may last (a health Watch, an indexer's feed of sales):
        // held to the idle rules, not to the request timeout.
        longLivedPaths: new Set([
          `/${Health.typeName}/${Health.method.watch.name}`,
          ...streams.map((m) => m.procedure),
          ...sseRoutes(services.services).map((r) => r.path),
          ...ingestStreams,
        ]),
      }) as unknown as http.Server;
    },
    // While closing, requests still arriving are refused by admission
    // (policy/admission.ts) with `unavailable`, in each protocol's error form.
    return503OnClosing: false,
  });
  app.addHook("preClose", (done) => {
    lifecycle.shutDown();
    done();
  });

  const observeHijacked = observeRoutes(app, log, metrics);
  registerNotFound(app, restFlags);
  registerHealthEndpoints(app, readiness, guard);
  registerDocs(app, guard);
  // On the API port: for this machine's callers only (a scraper elsewhere gets --metrics-port and --metrics-host).
  if (metrics !== undefined && metricsMode === "route") registerMetricsEndpoint(app, apiPortMetrics(metrics), { guard, loopbackOnly: addresses });
  for (const [path, raw] of registerRestRoutes(app, { services, admission, cache, watch, addresses })) rawGets.set(path, raw);
  registerSseRoutes(app, { services, admission, addresses, stallMs: t.idleMs, holdKey, observe: observeHijacked });
  registerIngestRoutes(app, { services, admission, addresses });
  registerConnectGetRoutes(app, { services, admission, cache, watch, addresses });
  return { app, cache, ...(metrics === undefined ? {} : { metrics }) };
}



/** Why the store cannot be served (unreadable, or not at this build's schema); undefined when it can. */
async function storeNotReadyReason(store: ReadRepositories): Promise<string | undefined> {
  const { info } = store;
  try {
    const version = await info.schemaVersion();
    if (version !== info.expectedSchemaVersion) return `store schema version ${version}, this build needs ${info.expectedSchemaVersion}`;
  } catch {
    return "store not readable";
  }
  return undefined;
}

export interface RunningServer {
  app: FastifyInstance;
  url: string;
  cache: ResponseCache;
  /** Stops accepting connections, lets requests in flight finish, closes the store. */
  close(): Promise<void>;
}

export type StartOptions = Pick<ServeConfig, "db" | "port" | "host"> &
  Partial<
    Pick<ServeConfig, "cacheMb" | "logLevel" | "rateLimit" | "anonymousRateLimit" | "ingestRateLimit" | "redis" | "timeouts" | "metrics" | "corsOrigins" | "poolSize" | "trustProxy" | "deriveRefresh" | "streamsPerKey" | "maxStreams" | "maxClockSkewSeconds" | "webhooks">
  > & {
    drainMs?: number;
    feedMaxQueued?: number;
    feedPageRows?: number;
  };

/** One line per background derive: what it did, and how long after each write it brought up to date. */
function logRefresh(logger: Logger, r: RefreshReply): void {
  if ("failed" in r) {
    logger.warn({ collection: r.failed, err: r.message }, "background derive failed; the next write retries it");
    return;
  }
  const { contractAddress, mode, sales, fed, ms } = r.result;
  logger.info({ collection: contractAddress, mode, sales, fed, ms: Math.round(ms), waitedMs: r.waitedMs }, "derived");
}

/** Opens the store read-only (a SQLite file, or a PostgreSQL primary or replica) and serves it: the CLI's serve (each worker) and the tests' servers. */
export async function startServer(config: StartOptions): Promise<RunningServer> {
  const store = await openReadRepositories(config.db, {
    poolSize: config.poolSize ?? DEFAULTS.poolSize,
    queryTimeoutMs: config.timeouts?.storeMs ?? DEFAULTS.storeTimeout,
  });
  const logger = createLogger(config.logLevel ?? "silent");
  const limits = await countedLimits(config, logger);
  // Opened on the first write: a server never sent one never opens its store for writing.
  // Unless turned off, what ingest writes is derived from in the background.
  // The derive runs beside the writer that commits (on SQLite, the process elected to write the file).
  const writer = openIngestWriter(config.db, {
    onStopped: (why) => logger.error({ why }, "the store's writer thread stopped; its batches failed as unavailable, and the next write starts another"),
    ...(config.deriveRefresh === false
      ? {}
      : {
          local: (own) => {
            const refreshing = refreshAfterWrites(own, config.db, config.maxClockSkewSeconds);
            refreshing.onRefreshed((r) => logRefresh(logger, r));
            return refreshing;
          },
        }),
  });
  let webhooks: ReturnType<typeof startWebhooks> | undefined;
  try {
    // Webhooks: their store (SQLite: the file beside the store; PostgreSQL: its tables) and this process's deliveries.
    const hooks = await openWebhookStore(config.db).catch((err: unknown) => {
      // A store this server may only read (a read-only directory): it serves without webhooks rather than not at all.
      logger.warn({ err: err instanceof Error ? err.message : String(err) }, "webhooks unavailable on this server");
      return undefined;
    });
    if (hooks !== undefined) webhooks = startWebhooks(config.db, store, hooks, config.webhooks ?? resolveWebhooks({}), logger);
    // A port of their own: served by this process, or by the cluster primary for all workers (cli/serve.ts).
    const metricsMode = config.metrics?.enabled === false ? "off" : config.metrics?.port !== undefined ? "collect" : "route";
    const { app, cache, metrics } = await buildServer({
      store,
      writer,
      logger,
      cacheBytes: (config.cacheMb ?? DEFAULTS.cacheMb) * MIB,
      rateLimits: limits,
      trustProxy: config.trustProxy ?? [],
      ...(config.timeouts === undefined ? {} : { timeouts: config.timeouts }),
      ...(config.drainMs === undefined ? {} : { drainMs: config.drainMs }),
      metrics: metricsMode,
      corsOrigins: config.corsOrigins ?? [],
      streamLimits: { perKey: config.streamsPerKey, total: config.maxStreams },
      ...(config.feedMaxQueued === undefined ? {} : { feedMaxQueued: config.feedMaxQueued }),
      ...(config.feedPageRows === undefined ? {} : { feedPageRows: config.feedPageRows }),
      ...(config.maxClockSkewSeconds === undefined ? {} : { maxClockSkewSeconds: config.maxClockSkewSeconds }),
      webhooks,
    });
    const metricsServer = await publishMetrics(metrics, config);
    await app.listen({ port: config.port, host: config.host }).catch(async (err: unknown) => {
      await metricsServer?.close();
      throw listenError(err, config.host, config.port, API_LISTENER);
    });
    const address = app.server.address();
    if (address === null || typeof address === "string") throw new Error("no TCP address");
    const host = address.family === "IPv6" ? `[${address.address}]` : address.address;
    return {
      app,
      cache,
      url: `http://${host}:${address.port}`,
      close: async () => {
        await app.close();
        // After the last request: every delivered position written, leases given back to the other servers.
        await webhooks?.close();
        await metricsServer?.close();
        await writer.close();
        await limits.close();
        await store.close();
      },
    };
  } catch (err) {
    await webhooks?.close();
    await writer.close();
    await limits.close();
    await store.close();
    throw err;
  }
}
