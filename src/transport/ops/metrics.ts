import { Code } from "@connectrpc/connect";
import { codeToString } from "@connectrpc/connect/protocol-connect";
import type { StoreInfo } from "../../store/ports/reads.js";
import type { FastifyInstance } from "fastify";
import type { ClientAddresses } from "../policy/client-address.js";
import type { PublicGuard } from "../policy/admission.js";
import type { WebhookStats } from "../../service/webhooks/held.js";
import { collectDefaultMetrics, Counter, Gauge, type Metric, Registry } from "prom-client";

// Prometheus metrics (prom-client), on a registry of this server's own. Labels
// are bounded: the procedure is a route or RPC the server defines (anything
// else is "unmatched"), the protocol one of five, the code one of Connect's
// names. No API key, query string or caller value ever becomes a label.
// Counts the server keeps anyway (cache hits, rate-limit refusals) are read
// at scrape time, not on every request.

export type Protocol = "rest" | "connect-get" | "connect" | "grpc-web" | "grpc";

export interface MetricSources {
  cache: { hits: number; misses: number; bytes: number };
  rateLimited: { key: number; address: number };
  /** Key lookups that reached the store (a memoized answer is not one). */
  keyLookups: { storeLookups: number };
  /** Requests counted in this process because the shared rate-limit store (Redis) did not answer; absent without one. */
  rateLimitFallbacks?: () => number;
  /** The store's data version and last write (the last import, derive or key change). */
  store: Pick<StoreInfo, "dataVersion" | "lastWrite">;
  /** The live feeds of this process (service/feed-hub.ts FeedHub.stats). */
  feeds?: { open: number; sent: number; endedSlow: number; channelReads: number };
  /** The webhooks this process delivers (service/webhooks/dispatcher.ts stats), one series each. */
  webhooks?: () => readonly WebhookStats[];
}

const HTTP_CODES: Record<number, Code> = {
  400: Code.InvalidArgument,
  401: Code.Unauthenticated,
  403: Code.PermissionDenied,
  404: Code.NotFound,
  408: Code.DeadlineExceeded,
  409: Code.Aborted,
  412: Code.FailedPrecondition,
  415: Code.InvalidArgument,
  429: Code.ResourceExhausted,
  499: Code.Canceled,
  500: Code.Internal,
  501: Code.Unimplemented,
  503: Code.Unavailable,
  504: Code.DeadlineExceeded,
};

/** The Connect code name of an HTTP answer (200 and 304: "ok"). */
export function codeOfHttpStatus(status: number): string {
  if (status < 400) return "ok";
  const code = HTTP_CODES[status];
  return code === undefined ? "unknown" : codeToString(code);
}

/** The Connect code name of a gRPC status number. */
export function codeOfGrpcStatus(status: number): string {
  return status === 0 ? "ok" : Code[status] === undefined ? "unknown" : codeToString(status as Code);
}

const BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5];

/** One (procedure, protocol)'s requests: counts by code and a latency histogram. */
interface RequestSeries {
  procedure: string;
  protocol: Protocol;
  byCode: Map<string, number>;
  /** Non-cumulative: buckets[i] counts durations <= BUCKETS[i] and > BUCKETS[i - 1]; the last slot is +Inf. */
  buckets: Float64Array;
  sum: number;
  count: number;
}

type MetricValue = { labels: Record<string, string | number>; value: number; metricName?: string };

export class ServerMetrics {
  readonly registry = new Registry();
  /**
   * Per-request counts are plain numbers in this map, turned into samples
   * at scrape time: prom-client's labelled inc()/observe() hash their labels
   * on every call, a visible share of a cached answer's CPU (bench:profile).
   */
  readonly #series = new Map<string, RequestSeries>();

  constructor(sources: MetricSources) {
    const registers = [this.registry];
    collectDefaultMetrics({ register: this.registry });
    const series = () => [...this.#series.values()];
    this.registry.registerMetric(
      customMetric("marketdata_requests_total", "Requests answered, by procedure (route or RPC), protocol and Connect code", "counter", () =>
        series().flatMap((s) => [...s.byCode].map(([code, value]) => ({ labels: { procedure: s.procedure, protocol: s.protocol, code }, value }))),
      ),
    );
    this.registry.registerMetric(
      customMetric("marketdata_request_duration_seconds", "Time from request to the end of the response", "histogram", () =>
        series().flatMap((s) => {
          const labels = { procedure: s.procedure, protocol: s.protocol };
          const out: MetricValue[] = [];
          let cumulative = 0;
          BUCKETS.forEach((le, i) => {
            cumulative += s.buckets[i]!;
            out.push({ labels: { ...labels, le }, value: cumulative, metricName: "marketdata_request_duration_seconds_bucket" });
          });
          out.push({ labels: { ...labels, le: "+Inf" }, value: s.count, metricName: "marketdata_request_duration_seconds_bucket" });
          out.push({ labels, value: s.sum, metricName: "marketdata_request_duration_seconds_sum" });
          out.push({ labels, value: s.count, metricName: "marketdata_request_duration_seconds_count" });
          return out;
        }),
      ),
    );
    new Counter({
      name: "marketdata_response_cache_requests_total",
      help: "Response cache lookups, by result",
      labelNames: ["result"],
      registers,
      collect() {
        this.reset();
        this.inc({ result: "hit" }, sources.cache.hits);
        this.inc({ result: "miss" }, sources.cache.misses);
      },
    });
    new Gauge({
      name: "marketdata_response_cache_bytes",
      help: "Bytes held by the response cache",
      registers,
      collect() {
        this.set(sources.cache.bytes);
      },
    });
    new Counter({
      name: "marketdata_rate_limited_total",
      help: "Requests refused by a rate limit, by subject (an API key, or the address of a caller without a valid key)",
      labelNames: ["subject"],
      registers,
      collect() {
        this.reset();
        this.inc({ subject: "key" }, sources.rateLimited.key);
        this.inc({ subject: "address" }, sources.rateLimited.address);
      },
    });
    new Counter({
      name: "marketdata_key_store_lookups_total",
      help: "API key lookups that reached the store (keys not verified in the last second, or unknown keys within their address's limit)",
      registers,
      collect() {
        this.reset();
        this.inc(sources.keyLookups.storeLookups);
      },
    });
    const fallbacks = sources.rateLimitFallbacks;
    if (fallbacks !== undefined) {
      new Counter({
        name: "marketdata_rate_limit_fallbacks_total",
        help: "Requests counted by this process alone because the shared rate-limit store (Redis) did not answer within its deadline",
        registers,
        collect() {
          this.reset();
          this.inc(fallbacks());
        },
      });
    }
    const feeds = sources.feeds;
    if (feeds !== undefined) {
      new Gauge({
        name: "marketdata_feed_streams_open",
        help: "Live-feed streams open (WatchSales, WatchListings, their SSE routes)",
        registers,
        collect() {
          this.set(feeds.open);
        },
      });
      const counter = (name: string, help: string, read: () => number) =>
        new Counter({
          name,
          help,
          registers,
          collect() {
            this.reset();
            this.inc(read());
          },
        });
      counter("marketdata_feed_events_sent_total", "Records sent to live-feed subscribers", () => feeds.sent);
      counter("marketdata_feed_subscribers_ended_slow_total", "Live-feed subscribers ended for reading too slowly (sent their resume token)", () => feeds.endedSlow);
      counter("marketdata_feed_store_reads_total", "Store reads made for the live feeds' channels (one per commit and watched collection)", () => feeds.channelReads);
    }
    const webhooks = sources.webhooks;
    if (webhooks !== undefined) {
      const perWebhook = (name: string, help: string, read: (w: WebhookStats) => number, kind: "gauge" | "counter") => {
        const Metric = kind === "gauge" ? Gauge : Counter;
        new Metric({
          name,
          help,
          labelNames: ["webhook"],
          registers,
          collect() {
            this.reset();
            for (const w of webhooks()) (this as Gauge).inc({ webhook: w.id }, read(w));
          },
        });
      };
      perWebhook("marketdata_webhook_lag_positions", "How far a webhook is behind its collections' newest events, in feed positions (its process's view)", (w) => w.lagPositions, "gauge");
      perWebhook("marketdata_webhook_lag_seconds", "Seconds since a webhook was last caught up (0: caught up)", (w) => w.lagSeconds, "gauge");
      perWebhook("marketdata_webhook_deliveries_total", "Batches a receiver took (2xx), by this process", (w) => w.delivered, "counter");
      perWebhook("marketdata_webhook_failures_total", "Delivery attempts that failed (no answer, or not 2xx), by this process", (w) => w.failed, "counter");
      perWebhook("marketdata_webhook_events_total", "Events delivered, by this process", (w) => w.events, "counter");
    }
    new Gauge({
      name: "marketdata_store_data_version",
      help: "The store's data version as this server sees it: moves on every committed write (on a replica, once replayed)",
      registers,
      async collect() {
        this.set(await sources.store.dataVersion());
      },
    });
    new Gauge({
      name: "marketdata_store_last_write_timestamp_seconds",
      help: "Last write to the store (an import, a derive, a key change), Unix time",
      registers,
      async collect() {
        this.set(await sources.store.lastWrite());
      },
    });
  }

  /** Records one answered request taking `seconds`. */
  observe(procedure: string, protocol: Protocol, code: string, seconds: number): void {
    const key = `${procedure} ${protocol}`;
    let s = this.#series.get(key);
    if (s === undefined) {
      s = { procedure, protocol, byCode: new Map(), buckets: new Float64Array(BUCKETS.length + 1), sum: 0, count: 0 };
      this.#series.set(key, s);
    }
    s.byCode.set(code, (s.byCode.get(code) ?? 0) + 1);
    let i = 0;
    while (i < BUCKETS.length && seconds > BUCKETS[i]!) i++;
    s.buckets[i]!++;
    s.sum += seconds;
    s.count++;
  }
}

/** A metric whose samples are computed at scrape time (prom-client calls get()); summed across cluster workers. */
function customMetric(name: string, help: string, type: "counter" | "histogram", values: () => MetricValue[]): Metric {
  // prom-client's registry reads name, help, type, aggregator, get() and reset() of what it holds; its
  // type names its own classes only.
  return {
    name,
    help,
    type,
    aggregator: "sum" as const,
    get: async () => ({ name, help, type, aggregator: "sum" as const, values: values() }),
    reset: () => {},
  } as unknown as Metric;
}

export interface MetricsRouteOptions {
  guard?: PublicGuard;
  /** Answers only this machine's callers (others get 404): the API port's default. */
  loopbackOnly?: ClientAddresses;
}

/**
 * GET /metrics in Prometheus' text format, without an API key: on the API
 * port for callers on this machine only, or on a listener of its own
 * (--metrics-port, --metrics-host) for a scraper elsewhere.
 */
export function registerMetricsEndpoint(
  app: FastifyInstance,
  metrics: { registry: { contentType: string; metrics(): Promise<string> } },
  options: MetricsRouteOptions = {},
): void {
  const { guard, loopbackOnly } = options;
  app.get("/metrics", guard === undefined ? {} : { onRequest: guard }, async (request, reply) => {
    if (loopbackOnly !== undefined && !loopbackOnly.isLoopback(request.raw)) {
      return reply.code(404).send({ code: "not_found", message: 'no route GET "/metrics"' });
    }
    return reply.header("cache-control", "no-store").type(metrics.registry.contentType).send(await metrics.registry.metrics());
  });
}
