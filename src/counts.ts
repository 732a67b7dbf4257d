import cluster from "node:cluster";
import Fastify, { type FastifyInstance } from "fastify";
import { Redis } from "ioredis";
import type { Logger } from "pino";
import { AggregatorRegistry } from "prom-client";
import { RateLimiterClusterMaster } from "rate-limiter-flexible";
import type { ServeConfig } from "./config/serve.js";
import { DEFAULTS } from "./config/settings.js";
import { listenError, METRICS_LISTENER } from "./listen-errors.js";
import type { RateLimits } from "./transport/policy/admission.js";
import { clusterWindows, MemoryWindows, REDIS_DEADLINE_MS, RedisWindows, WARN_EVERY_MS } from "./transport/policy/rate-limit.js";
import { registerMetricsEndpoint, type ServerMetrics } from "./transport/ops/metrics.js";

// Where a server's counts live, for each role a process can have: one
// process serving alone, a worker of `serve --workers N`, and the cluster
// primary that holds what its workers share. Rate limits are counted in
// Redis (every server shares one count), else in the primary for its
// workers, else in the process; metrics on a port of their own are served
// by the process alone, or by the primary summing its workers'.

type CountConfig = Partial<Pick<ServeConfig, "rateLimit" | "anonymousRateLimit" | "ingestRateLimit" | "redis" | "metrics">>;

/** How long startup waits for Redis before serving with per-process counts meanwhile. */
const REDIS_READY_MS = 3000;

export interface CountedLimits {
  limits: RateLimits;
  degraded?: () => string | undefined;
  fallbacks?: () => number;
  close(): Promise<void>;
}

/**
 * A serving process's rate-limit windows (alone or a worker). Counted even
 * when both server limits are 0: a key's own limit (keys create --rate)
 * always holds.
 */
export async function countedLimits(config: CountConfig, log: Logger): Promise<CountedLimits> {
  const keyRate = config.rateLimit ?? 0;
  const anonymousRate = config.anonymousRateLimit ?? 0;
  const ingestRate = config.ingestRateLimit ?? 0;
  if (config.redis !== undefined) {
    // Commands fail at their deadline rather than queue (RedisWindows falls back meanwhile).
    const client = new Redis(config.redis.url, { enableOfflineQueue: false, maxRetriesPerRequest: 1, commandTimeout: REDIS_DEADLINE_MS });
    // Without a listener a connection error would end the process; the limiter falls back meanwhile.
    // At most one line per WARN_EVERY_MS (ioredis reports each reconnection attempt), the others counted.
    let warnedAt = -Infinity;
    let unsaid = 0;
    client.on("error", (err: Error) => {
      const now = Date.now();
      if (now - warnedAt < WARN_EVERY_MS) {
        unsaid++;
        return;
      }
      log.warn({ err: err.message, ...(unsaid > 0 ? { sinceLast: unsaid } : {}) }, "redis connection error");
      warnedAt = now;
      unsaid = 0;
    });
    const ready = await new Promise<boolean>((resolve) => {
      const timer = setTimeout(() => resolve(false), REDIS_READY_MS);
      client.once("ready", () => {
        clearTimeout(timer);
        resolve(true);
      });
    });
    if (!ready) log.warn("redis not ready: rate limits are counted per process until it is");
    const windows = new RedisWindows(client, config.redis.prefix, { log });
    return {
      limits: { keyRate, ingestRate, anonymousRate, windows },
      degraded: () => windows.degradedReason(),
      fallbacks: () => windows.fallbacks,
      close: async () => {
        await client.quit().catch(() => client.disconnect());
      },
    };
  }
  const onError = (err: unknown) => log.warn({ err }, "rate-limit store failed; request admitted");
  const windows = cluster.isWorker ? clusterWindows(onError) : new MemoryWindows();
  return { limits: { keyRate, ingestRate, anonymousRate, windows }, close: async () => {} };
}

/**
 * A serving process's metrics on a port of their own (--metrics-port): served
 * here when alone; in a worker, handed to the primary, which serves the sum.
 */
export async function publishMetrics(metrics: ServerMetrics | undefined, config: CountConfig): Promise<FastifyInstance | undefined> {
  if (metrics === undefined || config.metrics?.port === undefined) return undefined;
  if (cluster.isWorker) {
    // Constructing one installs the worker's answer to the primary's requests (prom-client's cluster.js).
    new AggregatorRegistry();
    AggregatorRegistry.setRegistries([metrics.registry]);
    return undefined;
  }
  return serveMetrics(metrics.registry, config.metrics.port, config.metrics.host ?? DEFAULTS.metricsHost);
}

/** The message a worker sends its primary for the sum of every worker's metrics, and the answer. */
const SCRAPE = "marketdata:metrics";
type ScrapeMessage = { type: typeof SCRAPE; id: number; text?: string; error?: string };

/**
 * What GET /metrics on the API port answers in a serving process: alone, its
 * own registry; in a worker of several, the sum of every worker's, asked of
 * the primary (which asks each worker, prom-client's aggregator over IPC),
 * so that a scrape answers the same counters whichever worker took it
 * (one worker's alone looked like counters resetting between scrapes).
 */
export function apiPortMetrics(metrics: ServerMetrics): { registry: { contentType: string; metrics(): Promise<string> } } {
  if (!cluster.isWorker || process.send === undefined) return metrics;
  new AggregatorRegistry();
  AggregatorRegistry.setRegistries([metrics.registry]);
  let next = 0;
  const waiting = new Map<number, { resolve(text: string): void; reject(err: Error): void }>();
  process.on("message", (m: ScrapeMessage) => {
    if (m?.type !== SCRAPE) return;
    const w = waiting.get(m.id);
    waiting.delete(m.id);
    if (m.error !== undefined) w?.reject(new Error(m.error));
    else w?.resolve(m.text ?? "");
  });
  return {
    registry: {
      contentType: metrics.registry.contentType,
      metrics: () =>
        new Promise<string>((resolve, reject) => {
          const id = ++next;
          const timer = setTimeout(() => {
            waiting.delete(id);
            reject(new Error("the cluster's metrics did not come within 5 s"));
          }, 5000);
          waiting.set(id, { resolve: (t) => (clearTimeout(timer), resolve(t)), reject: (e) => (clearTimeout(timer), reject(e)) });
          process.send!({ type: SCRAPE, id } satisfies ScrapeMessage);
        }),
    },
  };
}

/**
 * The cluster primary's counts: its workers' rate-limit windows (unless
 * Redis holds them) and the sum of their metrics on --metrics-port, and
 * for the workers' own /metrics (apiPortMetrics).
 */
export async function primaryCounts(config: CountConfig): Promise<{ close(): Promise<void> }> {
  // The workers' rate-limit counts live here, so N workers enforce one limit (Redis, when given, replaces it).
  if (config.redis === undefined) new RateLimiterClusterMaster();
  // Metrics on their own port: the sum of every worker's (prom-client's aggregator over IPC).
  const aggregator = new AggregatorRegistry();
  const onScrape = (worker: import("node:cluster").Worker, m: ScrapeMessage) => {
    if (m?.type !== SCRAPE) return;
    aggregator.clusterMetrics().then(
      (text) => worker.isConnected() && worker.send({ type: SCRAPE, id: m.id, text } satisfies ScrapeMessage),
      (err: unknown) => worker.isConnected() && worker.send({ type: SCRAPE, id: m.id, error: err instanceof Error ? err.message : String(err) } satisfies ScrapeMessage),
    );
  };
  if (config.metrics?.enabled !== false) cluster.on("message", onScrape);
  const server =
    config.metrics?.enabled !== false && config.metrics?.port !== undefined
      ? await serveMetrics({ contentType: aggregator.contentType, metrics: () => aggregator.clusterMetrics() }, config.metrics.port, config.metrics.host ?? DEFAULTS.metricsHost)
      : undefined;
  return {
    close: async () => {
      cluster.off("message", onScrape);
      await server?.close();
    },
  };
}

/** GET /metrics alone, on a port of its own (no API key: bind it where only the scraper reaches). */
async function serveMetrics(registry: { contentType: string; metrics(): Promise<string> }, port: number, host: string): Promise<FastifyInstance> {
  const app = Fastify();
  registerMetricsEndpoint(app, { registry });
  await app.listen({ port, host }).catch(async (err: unknown) => {
    await app.close();
    throw listenError(err, host, port, METRICS_LISTENER);
  });
  return app;
}
