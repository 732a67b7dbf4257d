import { ConfigError } from "./checks.js";
import { DEFAULTS, defaultWorkers, type Given, type LogLevel, readSettings, SERVE_SETTINGS, settingName, type Values } from "./settings.js";

// The configuration of the commands that listen (serve, start), validated
// once at startup from the settings table (settings.ts) and passed down;
// nothing below the CLI reads process.env.

/** How long, on shutdown, idle keep-alive connections may still bring a request (ms). Not a setting: a part of --shutdown-timeout. */
export const DRAIN_MS = 1000;

export interface ServeConfig {
  db: string;
  port: number;
  host: string;
  /** Response cache size; 0 turns it off. */
  cacheMb: number;
  /** Processes serving the port (node:cluster); 1 serves from this process. */
  workers: number;
  logLevel: LogLevel;
  /** Requests per second per key without its own limit; 0: unlimited. */
  rateLimit: number;
  /** Requests per second per client address without a valid key; 0: unlimited. */
  anonymousRateLimit: number;
  /** Ingest requests per second per key, counted apart from its reads; 0: unlimited. */
  ingestRateLimit: number;
  /** Shared rate-limit counts for several servers; absent: counted by this server. */
  redis?: { url: string; prefix: string } | undefined;
  timeouts: Timeouts;
  /** Prometheus metrics: off, on the main port (GET /metrics, loopback callers only), or on a host and port of their own. */
  metrics: { enabled: boolean; port?: number | undefined; host?: string | undefined };
  /** Proxies (addresses or CIDR blocks) whose X-Forwarded-For names the client. */
  trustProxy: string[];
  /** Origins browsers may call from (CORS); "*" for any; empty: off. */
  corsOrigins: string[];
  /** PostgreSQL connections per serving process (ignored for SQLite). */
  poolSize: number;
  /** Appraisals and rarity brought up to date in the background after ingest writes (derive/refresh.ts). */
  deriveRefresh: boolean;
  /** Milliseconds between the listing clock's commits (service/listing-clock.ts); 0: none. */
  listingClockMs: number;
  /** Live-feed streams open at once per API key, and in all, per serving process; 0: no limit. */
  streamsPerKey: number;
  maxStreams: number;
  /** How far past this server's clock a sale's or listing's time may be (seconds): later ones are refused. */
  maxClockSkewSeconds: number;
  /** Webhooks: delivery from this server and its bounds. */
  webhooks: WebhookSettings;
}

/** Milliseconds (flags are in seconds). */
export interface Timeouts {
  headersMs: number;
  requestMs: number;
  keepAliveMs: number;
  idleMs: number;
  shutdownMs: number;
  /** A PostgreSQL query's bound (statement_timeout; the client waits a second longer); absent: the --store-timeout default. */
  storeMs?: number;
}

/** What commander gives for serve's flags. */
export type ServeFlags = Given<typeof SERVE_SETTINGS>;
type Env = Readonly<Record<string, string | undefined>>;

/** serve's and start's configuration: each setting from `flags`, else `env`, else its default; then the checks across settings. */
export function resolveServeConfig(flags: ServeFlags, env: Env = {}): ServeConfig {
  const v = readSettings(SERVE_SETTINGS, flags, env);
  const s = SERVE_SETTINGS;
  // Headers arrive within the request, so Node requires this order.
  if (v.headersTimeout > v.requestTimeout) {
    throw new ConfigError(`${settingName(s.headersTimeout)} (${v.headersTimeout / 1000} s) must not exceed ${settingName(s.requestTimeout)} (${v.requestTimeout / 1000} s)`);
  }
  if (v.metricsHost !== DEFAULTS.metricsHost && v.metricsPort === undefined) throw new ConfigError(`${settingName(s.metricsHost)} needs ${settingName(s.metricsPort)}`);
  return {
    db: v.db,
    host: v.host,
    port: v.port,
    cacheMb: v.cacheMb,
    workers: v.workers === 0 ? defaultWorkers() : v.workers,
    logLevel: v.logLevel,
    rateLimit: v.rateLimit,
    anonymousRateLimit: v.anonymousRateLimit,
    ingestRateLimit: v.ingestRateLimit,
    redis: v.redis === undefined ? undefined : { url: v.redis, prefix: v.redisPrefix },
    timeouts: {
      headersMs: v.headersTimeout,
      requestMs: v.requestTimeout,
      keepAliveMs: v.keepAliveTimeout,
      idleMs: v.idleTimeout,
      shutdownMs: v.shutdownTimeout,
      storeMs: v.storeTimeout,
    },
    corsOrigins: v.corsOrigin,
    poolSize: v.poolSize,
    deriveRefresh: v.deriveRefresh,
    listingClockMs: v.listingClock,
    streamsPerKey: v.streamsPerKey,
    maxStreams: v.maxStreams,
    maxClockSkewSeconds: v.maxClockSkew,
    metrics: { enabled: v.metrics, port: v.metricsPort, host: v.metricsHost },
    trustProxy: v.trustProxy,
    webhooks: webhooksOf(v),
  };
}

/** The webhook settings alone (serve's, or a test's server). */
export function resolveWebhooks(flags: ServeFlags, env: Env = {}): WebhookSettings {
  return webhooksOf(readSettings(SERVE_SETTINGS, flags, env));
}

/** The webhook settings of values already read (each setting read and checked once: --webhook-ca's file is read once). */
function webhooksOf(v: Values<typeof SERVE_SETTINGS>): WebhookSettings {
  const s = SERVE_SETTINGS;
  // A delivery is started only while the lease outlasts it, with renewals in between.
  if (v.webhookLeaseSeconds < v.webhookTimeout * 1.5) {
    throw new ConfigError(
      `${settingName(s.webhookLeaseSeconds)} (${v.webhookLeaseSeconds / 1000}) must be at least 1.5 times ${settingName(s.webhookTimeout)} (${v.webhookTimeout / 1000})`,
    );
  }
  return {
    deliver: v.webhooks,
    allowPrivate: v.allowPrivateWebhooks,
    retryForMs: v.webhookRetryHours,
    concurrency: v.webhookConcurrency,
    perDestination: v.webhookPerDestination,
    timeoutMs: v.webhookTimeout,
    ca: v.webhookCa,
    leaseMs: v.webhookLeaseSeconds,
  };
}

/** The connection timeouts' defaults, in milliseconds (a server built without a configuration). */
export const DEFAULT_TIMEOUTS: Timeouts = {
  headersMs: DEFAULTS.headersTimeout,
  requestMs: DEFAULTS.requestTimeout,
  keepAliveMs: DEFAULTS.keepAliveTimeout,
  idleMs: DEFAULTS.idleTimeout,
  shutdownMs: DEFAULTS.shutdownTimeout,
  storeMs: DEFAULTS.storeTimeout,
};

/** What a server is told about its webhooks. */
export interface WebhookSettings {
  /** Deliver from this process (false: --no-webhooks; administration still answers). */
  deliver: boolean;
  /** --allow-private-webhooks: http, loopback and private destinations. */
  allowPrivate: boolean;
  retryForMs: number;
  concurrency: number;
  perDestination: number;
  timeoutMs: number;
  /** Extra certificate authorities for receivers (PEM). */
  ca?: string | undefined;
  /** Tests: faster polls and leases. */
  pollMs?: number;
  leaseMs?: number;
  leaseEveryMs?: number;
  batchSize?: number;
}
