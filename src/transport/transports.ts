import type http from "node:http";
import { type ConnectRouter, createContextValues } from "@connectrpc/connect";
import { connectNodeAdapter } from "@connectrpc/connect-node";
import Fastify, { type FastifyBaseLogger, type FastifyInstance, LogController } from "fastify";
import type { Logger } from "pino";
import type { Timeouts } from "../config/serve.js";
import { MAX_BATCH_BYTES } from "../domain/ingest-limits.js";
import type { FeedHub } from "../service/feed-hub.js";
import { admitNextBatch } from "../service/ingest-service.js";
import { ADMIN_PROCEDURES, INGEST_PROCEDURES, readOnlyUnaryMethods, serverStreamingMethods, type ServiceSet } from "../service/services.js";
import { streamCaller } from "../service/watch.js";
import type { WebhookStats } from "../service/webhooks/held.js";
import type { ReadRepositories } from "../store/ports/reads.js";
import { Health } from "../../gen/health/v1/health_pb.js";
import { IngestService } from "../../gen/marketdata/v1/ingest_service_pb.js";
import { WebhookService } from "../../gen/marketdata/v1/webhook_service_pb.js";
import { DataVersionWatch, MemoizedKeyVerifier, ResponseCache } from "./cache/freshness.js";
import { observeRoutes, requestEntry } from "./entry.js";
import { corsPolicy } from "./http/cors.js";
import { DualProtocolServer, type RequestHandler } from "./http/dual-protocol-server.js";
import { registerNotFound } from "./http/not-found.js";
import { registerDocs } from "./ops/docs.js";
import { cachedReadiness, healthRoutes, Lifecycle, registerHealthEndpoints } from "./ops/health.js";
import { registerMetricsEndpoint, ServerMetrics } from "./ops/metrics.js";
import { reflectionRoutes } from "./ops/reflection.js";
import { Admission, addressLimited, type RateLimits } from "./policy/admission.js";
import { ClientAddresses } from "./policy/client-address.js";
import type { KeyVerifier } from "./policy/guards.js";
import { HeldKeys, type HoldKey, KEY_REVOKED } from "./policy/held-keys.js";
import { PUBLIC_SERVICES } from "./policy/public-services.js";
import { sseRoutes } from "./rest/http-rules.js";
import { registerExportRoutes } from "./rest/export.js";
import { registerIngestRoutes } from "./rest/ingest.js";
import { registerSseRoutes } from "./rest/sse.js";
import { type RawGet, registerRestRoutes, successFlags } from "./rest/transcoder.js";
import { MAX_REQUEST_MESSAGE_BYTES } from "./rpc/body.js";
import { registerConnectGetRoutes } from "./rpc/connect-get.js";
import { type AdmittedRequest, createRpcGate } from "./rpc/gate.js";
import { createGrpcStreamHandler } from "./rpc/grpc-stream.js";
import { createGrpcUnaryHandler } from "./rpc/grpc-unary.js";
import { requestLogger, rpcInterceptors, streamOutcome } from "./rpc/interceptors.js";
import { jsonMessageText } from "./rpc/json-text.js";
import { streamOutcomes } from "./stream/pipeline.js";

// The transports' one face: every protocol over the services, on one port.
// REST /v1 and Connect GET through Fastify (in-process calls, cached);
// Connect POST, gRPC-Web and gRPC (HTTP/2 prior knowledge) straight to
// connect-node's handler, which skips Fastify's routing and hooks: those
// requests never reach a Fastify route anyway. The composition root
// (server.ts) hands it the services and settings; nothing here opens a
// store or starts a service.

export interface TransportDeps {
  store: ReadRepositories;
  services: ServiceSet;
  feeds: FeedHub;
  /** The key check (the store's keys repository, or a test's). */
  keys: KeyVerifier;
  log: Logger;
  /** Response cache size in bytes; 0 turns it off. */
  cacheBytes: number;
  /** Per-key and per-address request limits and how their store fares; keys' own limits only when absent. */
  rateLimits?: { limits: RateLimits; degraded?: () => string | undefined; fallbacks?: () => number } | undefined;
  timeouts: Timeouts;
  /** On close, how long idle keep-alive connections may still send a request (ms). */
  drainMs: number;
  /** "route" serves GET /metrics on this port; "off" collects nothing; "collect" collects for another listener. */
  metrics: "route" | "off" | "collect";
  corsOrigins: readonly string[];
  trustProxy: readonly string[];
  /** This process's webhook deliveries, for the metrics. */
  webhookStats?: (() => readonly WebhookStats[]) | undefined;
  /** What GET /metrics on this port answers from (a cluster worker: every worker's sum, counts.ts); this process's metrics when absent. */
  apiMetrics?: ((metrics: ServerMetrics) => Parameters<typeof registerMetricsEndpoint>[1]) | undefined;
}

export interface BuiltServer {
  app: FastifyInstance;
  cache: ResponseCache;
  /** Absent when metrics are off. */
  metrics?: ServerMetrics;
}

const MIB = 1024 * 1024;

/** The whole service as a Fastify instance, not yet listening. */
export function buildTransports(deps: TransportDeps): BuiltServer {
  const log = deps.log;
  const watch = new DataVersionWatch(deps.store.info);
  const keys = new MemoizedKeyVerifier(deps.keys, watch);
  const cache = new ResponseCache(deps.cacheBytes, watch);
  const { services, feeds } = deps;
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
  const metricsMode = deps.metrics;
  const metrics =
    metricsMode === "off"
      ? undefined
      : new ServerMetrics({
          cache,
          rateLimited: admission.refused,
          keyLookups: keys,
          store: deps.store.info,
          feeds: feeds.stats,
          ...(deps.webhookStats === undefined ? {} : { webhooks: deps.webhookStats }),
          ...(deps.rateLimits?.fallbacks === undefined ? {} : { rateLimitFallbacks: deps.rateLimits.fallbacks }),
        });
  const t = deps.timeouts;
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
        cors: corsPolicy(deps.corsOrigins),
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
        drainMs: deps.drainMs,
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

  registerTransports(app, { services, admission, cache, watch, addresses, guard, readiness, restFlags, holdKey, log, metrics, metricsMode, stallMs: t.idleMs, rawGets, apiMetrics: deps.apiMetrics ?? ((m) => m) });
  return { app, cache, ...(metrics === undefined ? {} : { metrics }) };
}

/** What registerTransports puts on the app. */
interface RouteParts {
  services: ServiceSet;
  admission: Admission;
  cache: ResponseCache;
  watch: DataVersionWatch;
  addresses: ClientAddresses;
  guard: ReturnType<typeof addressLimited>;
  readiness: ReturnType<typeof cachedReadiness>;
  restFlags: ReturnType<typeof successFlags>;
  holdKey: HoldKey;
  log: Logger;
  metrics: ServerMetrics | undefined;
  metricsMode: TransportDeps["metrics"];
  stallMs: number;
  apiMetrics: NonNullable<TransportDeps["apiMetrics"]>;
  /** Filled with the REST routes' raw GET handlers (entry.ts answers a URL seen before without Fastify). */
  rawGets: Map<string, RawGet>;
}

/** Every Fastify route of every transport: not found, health, docs, metrics, REST, SSE, ingest, Connect GET. */
export function registerTransports(app: FastifyInstance, p: RouteParts): void {
  const { services, admission, cache, watch, addresses, guard, readiness, restFlags, holdKey, log, metrics, metricsMode, stallMs, rawGets, apiMetrics } = p;
  const observeHijacked = observeRoutes(app, log, metrics);
  registerNotFound(app, restFlags);
  registerHealthEndpoints(app, readiness, guard);
  registerDocs(app, guard);
  // On the API port: for this machine's callers only (a scraper elsewhere gets --metrics-port and --metrics-host).
  if (metrics !== undefined && metricsMode === "route") registerMetricsEndpoint(app, apiMetrics(metrics), { guard, loopbackOnly: addresses });
  for (const [path, raw] of registerRestRoutes(app, { services, admission, cache, watch, addresses })) rawGets.set(path, raw);
  registerSseRoutes(app, { services, admission, addresses, stallMs, holdKey, observe: observeHijacked });
  registerIngestRoutes(app, { services, admission, addresses });
  registerExportRoutes(app, { services, admission, addresses });
  registerConnectGetRoutes(app, { services, admission, cache, watch, addresses });
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

