import { availableParallelism } from "node:os";
import { parseProxyEntry } from "./transport/policy/client-address.js";
import { DEFAULT_MAX_STREAMS, DEFAULT_MAX_STREAMS_PER_KEY } from "./service/feed-limits.js";
import { DEFAULT_MAX_CLOCK_SKEW_SECONDS } from "./domain/formats.js";
import { readFileSync } from "node:fs";
import {
  DEFAULT_RETRY_HOURS,
  DEFAULT_WEBHOOK_CONCURRENCY,
  DEFAULT_WEBHOOK_PER_DESTINATION,
  DEFAULT_WEBHOOK_TIMEOUT_SECONDS,
  LEASE_MS,
} from "./service/webhooks/dispatcher.js";
import type { WebhookSettings } from "./service/webhooks/settings.js";
import { MAX_BATCH_RECORDS } from "./service/ingest-limits.js";
import { JETSTREAM_DEFAULTS } from "./transport/jetstream/defaults.js";
import type { JetStreamIngestOptions } from "./transport/jetstream/ingest-consumer.js";

export { DEFAULT_MAX_CLOCK_SKEW_SECONDS };

// Server configuration, validated once at startup. The CLI layer fills the
// flags from the command line, then the environment (MARKETDATA_DB, PORT,
// HOST, CACHE_MB, WORKERS, LOG_LEVEL), then defaults; nothing below it reads
// process.env.

export const DEFAULT_DB = "data/marketdata.sqlite";
export const DEFAULT_PORT = 8080;
export const DEFAULT_HOST = "127.0.0.1";
export const DEFAULT_CACHE_MB = 64;
export const DEFAULT_LOG_LEVEL = "info";
/** Requests per second of a key without its own limit, and of a client address without a valid key. */
export const DEFAULT_RATE_LIMIT = 1000;
export const DEFAULT_ANONYMOUS_RATE_LIMIT = 20;
/** Ingest requests (batches of up to 10,000 records) per second per key. */
export const DEFAULT_INGEST_RATE_LIMIT = 100;
export const DEFAULT_REDIS_PREFIX = "marketdata:rl";
/** Where --metrics-port listens unless --metrics-host says otherwise: this machine only. */
export const DEFAULT_METRICS_HOST = "127.0.0.1";
/** Seconds. */
export const DEFAULT_TIMEOUTS = {
  headers: 10,
  request: 30,
  keepAlive: 5,
  idle: 60,
  shutdown: 10,
  store: 10,
} as const;
/** How long, on shutdown, idle keep-alive connections may still bring a request (ms). */
export const DRAIN_MS = 1000;
/** PostgreSQL connections per serving process: a few per core keep the round trips overlapped. */
export const DEFAULT_POOL_SIZE = 10;
export const LOG_LEVELS = ["fatal", "error", "warn", "info", "debug", "trace", "silent"] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];
const MAX_WORKERS = 64;

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
  /** A PostgreSQL query's bound (statement_timeout; the client waits a second longer); absent: DEFAULT_TIMEOUTS.store. */
  storeMs?: number;
}

export class ConfigError extends Error {}

export interface ServeFlags {
  db?: string | undefined;
  port?: string | undefined;
  host?: string | undefined;
  cacheMb?: string | undefined;
  workers?: string | undefined;
  logLevel?: string | undefined;
  rateLimit?: string | undefined;
  anonymousRateLimit?: string | undefined;
  ingestRateLimit?: string | undefined;
  redis?: string | undefined;
  redisPrefix?: string | undefined;
  headersTimeout?: string | undefined;
  requestTimeout?: string | undefined;
  keepAliveTimeout?: string | undefined;
  idleTimeout?: string | undefined;
  shutdownTimeout?: string | undefined;
  storeTimeout?: string | undefined;
  poolSize?: string | undefined;
  /** false with --no-metrics. */
  metrics?: boolean | undefined;
  /** false with --no-derive-refresh. */
  deriveRefresh?: boolean | undefined;
  metricsPort?: string | undefined;
  metricsHost?: string | undefined;
  streamsPerKey?: string | undefined;
  maxStreams?: string | undefined;
  maxClockSkew?: string | undefined;
  corsOrigin?: string | undefined;
  trustProxy?: string | undefined;
  /** false with --no-webhooks. */
  webhooks?: boolean | undefined;
  allowPrivateWebhooks?: boolean | undefined;
  webhookRetryHours?: string | undefined;
  webhookConcurrency?: string | undefined;
  webhookPerDestination?: string | undefined;
  webhookTimeout?: string | undefined;
  webhookCa?: string | undefined;
  webhookLeaseSeconds?: string | undefined;
}

export function defaultWorkers(): number {
  return availableParallelism();
}

function wholeNumber(text: string, name: string, min: number, max: number): number {
  if (!/^[0-9]{1,9}$/.test(text) || Number(text) < min || Number(text) > max) {
    throw new ConfigError(`${name} must be an integer from ${min} to ${max}, got ${JSON.stringify(text)}`);
  }
  return Number(text);
}

/** Seconds, with up to three decimals, as milliseconds. */
function seconds(text: string, name: string, min: number, max: number): number {
  if (!/^[0-9]{1,6}(\.[0-9]{1,3})?$/.test(text) || Number(text) < min || Number(text) > max) {
    throw new ConfigError(`${name} must be a number of seconds from ${min} to ${max}, got ${JSON.stringify(text)}`);
  }
  return Math.round(Number(text) * 1000);
}

export function resolveTimeouts(flags: ServeFlags): Timeouts {
  const t = (flag: string | undefined, fallback: number, name: string) => seconds(flag ?? String(fallback), name, 0.01, 86_400);
  const timeouts = {
    headersMs: t(flags.headersTimeout, DEFAULT_TIMEOUTS.headers, "--headers-timeout"),
    requestMs: t(flags.requestTimeout, DEFAULT_TIMEOUTS.request, "--request-timeout"),
    keepAliveMs: t(flags.keepAliveTimeout, DEFAULT_TIMEOUTS.keepAlive, "--keep-alive-timeout"),
    idleMs: t(flags.idleTimeout, DEFAULT_TIMEOUTS.idle, "--idle-timeout"),
    shutdownMs: t(flags.shutdownTimeout, DEFAULT_TIMEOUTS.shutdown, "--shutdown-timeout"),
    storeMs: t(flags.storeTimeout, DEFAULT_TIMEOUTS.store, "--store-timeout"),
  };
  // Headers arrive within the request, so Node requires this order.
  if (timeouts.headersMs > timeouts.requestMs) {
    throw new ConfigError(
      `--headers-timeout (${timeouts.headersMs / 1000} s) must not exceed --request-timeout (${timeouts.requestMs / 1000} s)`,
    );
  }
  return timeouts;
}

export function resolveServeConfig(flags: ServeFlags): ServeConfig {
  const db = flags.db ?? DEFAULT_DB;
  const host = flags.host ?? DEFAULT_HOST;
  if (db.trim() === "") throw new ConfigError("--db (MARKETDATA_DB) must not be empty");
  if (host.trim() === "") throw new ConfigError("--host (HOST) must not be empty");
  const logLevel = (flags.logLevel ?? DEFAULT_LOG_LEVEL).toLowerCase();
  if (!(LOG_LEVELS as readonly string[]).includes(logLevel)) {
    throw new ConfigError(`--log-level (LOG_LEVEL) must be one of ${LOG_LEVELS.join(", ")}, got ${JSON.stringify(flags.logLevel)}`);
  }
  return {
    db,
    host,
    port: wholeNumber(flags.port ?? String(DEFAULT_PORT), "--port (PORT)", 0, 65535),
    cacheMb: wholeNumber(flags.cacheMb ?? String(DEFAULT_CACHE_MB), "--cache-mb (CACHE_MB)", 0, 1_000_000),
    workers: wholeNumber(flags.workers ?? String(defaultWorkers()), "--workers (WORKERS)", 1, MAX_WORKERS),
    logLevel: logLevel as LogLevel,
    rateLimit: wholeNumber(flags.rateLimit ?? String(DEFAULT_RATE_LIMIT), "--rate-limit (RATE_LIMIT)", 0, 1_000_000_000),
    anonymousRateLimit: wholeNumber(
      flags.anonymousRateLimit ?? String(DEFAULT_ANONYMOUS_RATE_LIMIT),
      "--anonymous-rate-limit (ANONYMOUS_RATE_LIMIT)",
      0,
      1_000_000_000,
    ),
    ingestRateLimit: wholeNumber(
      flags.ingestRateLimit ?? String(DEFAULT_INGEST_RATE_LIMIT),
      "--ingest-rate-limit (INGEST_RATE_LIMIT)",
      0,
      1_000_000_000,
    ),
    redis: flags.redis === undefined || flags.redis === "" ? undefined : { url: redisUrl(flags.redis), prefix: flags.redisPrefix ?? DEFAULT_REDIS_PREFIX },
    timeouts: resolveTimeouts(flags),
    corsOrigins: corsOrigins(flags.corsOrigin ?? ""),
    poolSize: wholeNumber(flags.poolSize ?? String(DEFAULT_POOL_SIZE), "--pool-size (PG_POOL_SIZE)", 1, 1000),
    deriveRefresh: flags.deriveRefresh !== false,
    streamsPerKey: wholeNumber(flags.streamsPerKey ?? String(DEFAULT_MAX_STREAMS_PER_KEY), "--streams-per-key (STREAMS_PER_KEY)", 0, 1_000_000),
    maxStreams: wholeNumber(flags.maxStreams ?? String(DEFAULT_MAX_STREAMS), "--max-streams (MAX_STREAMS)", 0, 1_000_000),
    maxClockSkewSeconds: resolveClockSkew(flags.maxClockSkew),
    metrics: {
      enabled: flags.metrics !== false,
      port: flags.metricsPort === undefined ? undefined : wholeNumber(flags.metricsPort, "--metrics-port (METRICS_PORT)", 1, 65535),
      host: metricsHost(flags),
    },
    trustProxy: trustProxy(flags.trustProxy ?? ""),
    webhooks: resolveWebhooks(flags),
  };
}

export function resolveWebhooks(flags: ServeFlags): WebhookSettings {
  const settings: WebhookSettings = {
    deliver: flags.webhooks !== false,
    allowPrivate: flags.allowPrivateWebhooks === true,
    retryForMs: hours(flags.webhookRetryHours ?? String(DEFAULT_RETRY_HOURS), "--webhook-retry-hours", 0.001, 720),
    concurrency: wholeNumber(flags.webhookConcurrency ?? String(DEFAULT_WEBHOOK_CONCURRENCY), "--webhook-concurrency", 1, 10_000),
    perDestination: wholeNumber(flags.webhookPerDestination ?? String(DEFAULT_WEBHOOK_PER_DESTINATION), "--webhook-per-destination", 1, 1000),
    timeoutMs: seconds(flags.webhookTimeout ?? String(DEFAULT_WEBHOOK_TIMEOUT_SECONDS), "--webhook-timeout", 0.1, 300),
    ca: webhookCa(flags.webhookCa),
    leaseMs: seconds(flags.webhookLeaseSeconds ?? String(LEASE_MS / 1000), "--webhook-lease-seconds", 1, 3600),
  };
  // A delivery is started only while the lease outlasts it, with renewals in between.
  if (settings.leaseMs! < settings.timeoutMs * 1.5) {
    throw new ConfigError(`--webhook-lease-seconds (${settings.leaseMs! / 1000}) must be at least 1.5 times --webhook-timeout (${settings.timeoutMs / 1000})`);
  }
  return settings;
}

/** Hours, with up to three decimals, as milliseconds. */
function hours(text: string, name: string, min: number, max: number): number {
  if (!/^[0-9]{1,3}(\.[0-9]{1,3})?$/.test(text) || Number(text) < min || Number(text) > max) {
    throw new ConfigError(`${name} must be a number of hours from ${min} to ${max}, got ${JSON.stringify(text)}`);
  }
  return Math.round(Number(text) * 3_600_000);
}

/** --webhook-ca FILE: certificate authorities (PEM) receivers' certificates may chain to, beyond Node's. */
function webhookCa(path: string | undefined): string | undefined {
  if (path === undefined || path === "") return undefined;
  let text: string;
  try {
    text = readFileSync(path, "utf8");
  } catch (err) {
    throw new ConfigError(`--webhook-ca ${JSON.stringify(path)} cannot be read: ${(err as Error).message}`);
  }
  if (!text.includes("-----BEGIN CERTIFICATE-----")) throw new ConfigError(`--webhook-ca ${JSON.stringify(path)} holds no PEM certificate`);
  return text;
}

/** --max-clock-skew (MAX_CLOCK_SKEW) of serve, import and derive: whole seconds, up to a year. */
export function resolveClockSkew(text: string | undefined): number {
  return wholeNumber(text ?? String(DEFAULT_MAX_CLOCK_SKEW_SECONDS), "--max-clock-skew (MAX_CLOCK_SKEW)", 0, 31_536_000);
}

function metricsHost(flags: ServeFlags): string | undefined {
  if (flags.metricsHost === undefined) return undefined;
  if (flags.metricsHost.trim() === "") throw new ConfigError("--metrics-host (METRICS_HOST) must not be empty");
  if (flags.metricsPort === undefined) throw new ConfigError("--metrics-host (METRICS_HOST) needs --metrics-port (METRICS_PORT)");
  return flags.metricsHost;
}

/** A comma-separated list of proxy addresses or CIDR blocks ("10.0.0.0/8, 127.0.0.1"). */
function trustProxy(text: string): string[] {
  const list = commaList(text);
  for (const p of list) {
    if (parseProxyEntry(p) === undefined) {
      throw new ConfigError(`--trust-proxy (TRUST_PROXY) takes addresses or CIDR blocks like 10.0.0.0/8 or ::1, got ${JSON.stringify(p)}`);
    }
  }
  return list;
}

/** The non-empty, trimmed items of a comma-separated flag value. */
function commaList(text: string): string[] {
  return text
    .split(",")
    .map((item) => item.trim())
    .filter((item) => item !== "");
}

function redisUrl(text: string): string {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw new ConfigError(`--redis (REDIS_URL) must be a redis:// URL, got ${JSON.stringify(text)}`);
  }
  if (url.protocol !== "redis:" && url.protocol !== "rediss:") {
    throw new ConfigError(`--redis (REDIS_URL) must be a redis:// or rediss:// URL, got ${JSON.stringify(text)}`);
  }
  return text;
}

/** A comma-separated list of origins ("https://app.example.com", "http://localhost:5173") or "*". */
function corsOrigins(text: string): string[] {
  const list = commaList(text);
  for (const o of list) {
    if (o === "*") continue;
    let url: URL | undefined;
    try {
      url = new URL(o);
    } catch {
      url = undefined;
    }
    if (url === undefined || url.origin !== o) {
      throw new ConfigError(`--cors-origin (CORS_ORIGIN) takes origins like https://app.example.com (scheme, host, port; no path) or *, got ${JSON.stringify(o)}`);
    }
  }
  return list;
}

/** `marketdata consume`'s flags, as the command line gave them. */
export interface ConsumeFlags {
  from: string;
  stream: string;
  subjectPrefix: string;
  durable: string;
  deadLetter: string;
  batch: string;
  pending: string;
  inflight: string;
  ackWait: string;
  progress: string;
}

/** NATS subject tokens: letters, digits, "-" and "_", dot-separated (no wildcards). */
const SUBJECT = /^[A-Za-z0-9_-]+(\.[A-Za-z0-9_-]+)*$/;
const STREAM_NAME = /^[A-Za-z0-9_-]{1,64}$/;

/** `marketdata consume`'s settings, validated (each flag named in its error). */
export function consumeConfig(flags: ConsumeFlags): JetStreamIngestOptions & { progressMs: number } {
  const servers = flags.from.split(",").map((s) => s.trim());
  for (const s of servers) {
    let url: URL | undefined;
    try {
      url = new URL(s);
    } catch {
      url = undefined;
    }
    if (url === undefined || (url.protocol !== "nats:" && url.protocol !== "tls:") || url.hostname === "") {
      throw new ConfigError(`--from (NATS_URL) takes nats://host:port URLs, comma-separated, got ${JSON.stringify(flags.from)}`);
    }
  }
  if (!STREAM_NAME.test(flags.stream)) throw new ConfigError(`--stream must be a JetStream stream name (letters, digits, - and _), got ${JSON.stringify(flags.stream)}`);
  if (!STREAM_NAME.test(flags.durable)) throw new ConfigError(`--durable must be a consumer name (letters, digits, - and _), got ${JSON.stringify(flags.durable)}`);
  for (const [flag, v] of [["--subject-prefix", flags.subjectPrefix], ["--dead-letter", flags.deadLetter]] as const) {
    if (!SUBJECT.test(v)) throw new ConfigError(`${flag} must be a NATS subject without wildcards (like marketdata.ingest), got ${JSON.stringify(v)}`);
  }
  if (flags.deadLetter === flags.subjectPrefix || flags.deadLetter.startsWith(`${flags.subjectPrefix}.`)) {
    throw new ConfigError(`--dead-letter (${flags.deadLetter}) must lie outside --subject-prefix (${flags.subjectPrefix}.>): dead letters would be consumed again`);
  }
  return {
    servers: servers.join(","),
    stream: flags.stream,
    subjectPrefix: flags.subjectPrefix,
    durable: flags.durable,
    deadLetter: flags.deadLetter,
    batch: wholeNumber(flags.batch, "--batch", 1, MAX_BATCH_RECORDS),
    pending: wholeNumber(flags.pending, "--pending", 1, 1_000_000),
    inflight: wholeNumber(flags.inflight, "--inflight", 1, 64),
    flushMs: JETSTREAM_DEFAULTS.flushMs,
    ackWaitSeconds: seconds(flags.ackWait, "--ack-wait", 1, 3600) / 1000,
    progressMs: seconds(flags.progress, "--progress", 0, 3600),
  };
}
