import type { FastifyInstance } from "fastify";
import { pino, type Logger } from "pino";
import { createLogger } from "./log.js";
import { API_LISTENER, listenError } from "./listen-errors.js";
import { DEFAULT_TIMEOUTS, DRAIN_MS, resolveWebhooks, type ServeConfig, type Timeouts } from "./config/serve.js";
import { DEFAULTS } from "./config/settings.js";
import { createServices } from "./service/services.js";
import { FeedHub, type FeedLimits } from "./service/feed-hub.js";
import { WriteNotices } from "./service/write-notices.js";
import type { WebhookDeps } from "./service/webhooks/webhook-service.js";
import { startWebhooks, type WebhookRuntime } from "./threads/webhooks.js";
import { apiPortMetrics, type CountedLimits, countedLimits, publishMetrics } from "./counts.js";
import { openIngestWriter, openReadRepositories, openWebhookStore } from "./store/open.js";
import { refreshAfterWrites } from "./derive/refresh-thread.js";
import type { RefreshReply } from "./derive/refresh-worker.js";
import type { ReadRepositories } from "./store/ports/reads.js";
import type { IngestWriter } from "./store/ports/writes.js";
import { ListingClock } from "./service/listing-clock.js";
import type { KeyVerifier } from "./transport/policy/guards.js";
import { type BuiltServer, buildTransports } from "./transport/transports.js";
import type { ResponseCache } from "./transport/cache/freshness.js";

export type { BuiltServer };

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
  /** Webhook administration and this process's deliveries (told of this process's writes when it listens); absent: WebhookService answers unimplemented. */
  webhooks?: WebhookDeps & Partial<Pick<WebhookRuntime, "onWrite">>;
}

const MIB = 1024 * 1024;

/**
 * The whole service as a Fastify instance, not yet listening, on one port:
 * the live feeds, the write notification and the services, handed to the
 * transports (transport/transports.ts).
 */
export async function buildServer(deps: ServerDeps): Promise<BuiltServer> {
  const log = deps.logger ?? pino({ level: "silent" });
  const feeds = new FeedHub(deps.store, deps.streamLimits, {
    ...(deps.feedPollMs === undefined ? {} : { pollMs: deps.feedPollMs }),
    ...(deps.feedMaxQueued === undefined ? {} : { maxQueued: deps.feedMaxQueued }),
    ...(deps.feedPageRows === undefined ? {} : { pageRows: deps.feedPageRows }),
  });
  // The write notification: this process's commits reach its feeds' subscribers and its webhooks without waiting for their polls.
  const notices = new WriteNotices();
  notices.subscribe(feeds.onWrite);
  if (deps.webhooks?.onWrite !== undefined) notices.subscribe(deps.webhooks.onWrite);
  const services = createServices(
    deps.store,
    deps.writer,
    feeds,
    { notices, ...(deps.maxClockSkewSeconds === undefined ? {} : { maxClockSkewSeconds: deps.maxClockSkewSeconds }) },
    deps.webhooks,
  );
  return buildTransports({
    store: deps.store,
    services,
    feeds,
    keys: deps.keys ?? deps.store.keys,
    log,
    cacheBytes: deps.cacheBytes ?? DEFAULTS.cacheMb * MIB,
    rateLimits: deps.rateLimits,
    timeouts: deps.timeouts ?? DEFAULT_TIMEOUTS,
    drainMs: deps.drainMs ?? DRAIN_MS,
    metrics: deps.metrics ?? "route",
    corsOrigins: deps.corsOrigins ?? [],
    trustProxy: deps.trustProxy ?? [],
    webhookStats: deps.webhooks?.stats,
    apiMetrics: apiPortMetrics,
  });
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
    Pick<ServeConfig, "cacheMb" | "logLevel" | "rateLimit" | "anonymousRateLimit" | "ingestRateLimit" | "redis" | "timeouts" | "metrics" | "corsOrigins" | "poolSize" | "trustProxy" | "deriveRefresh" | "streamsPerKey" | "maxStreams" | "maxClockSkewSeconds" | "webhooks" | "listingClockMs">
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
  // Listings lapse at their expiry by the clock (service/listing-clock.ts), whatever else is written.
  const clockMs = config.listingClockMs ?? DEFAULTS.listingClock;
  const clock = clockMs > 0 ? new ListingClock(writer, clockMs, logger) : undefined;
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
        await clock?.close();
        await writer.close();
        await limits.close();
        await store.close();
      },
    };
  } catch (err) {
    await webhooks?.close();
    await clock?.close();
    await writer.close();
    await limits.close();
    await store.close();
    throw err;
  }
}
