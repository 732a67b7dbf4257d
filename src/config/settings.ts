import { availableParallelism } from "node:os";
import {
  type Check,
  hours,
  natsUrls,
  nonEmpty,
  onOff,
  oneOf,
  originList,
  pemFile,
  proxyList,
  redisUrl,
  seconds,
  streamName,
  subject,
  text,
  wholeNumber,
} from "./checks.js";
import { MAX_BATCH_RECORDS } from "../domain/ingest-limits.js";

// Every setting an operator can give, in one table: its flag, its
// environment variable, its default, its check, its help and its help group.
// The CLI builds commander's options from it (cli/setting-options.ts) and
// serve.ts and consume.ts build the validated configuration from it; no
// other module declares a flag, names a variable or holds an operator's
// default (DEFAULTS below is read by the modules that need a fallback).
// A value is taken from the command line, else the environment, else the
// default: a flag given beats its variable.

export const GROUPS = {
  serving: "Serving",
  limits: "Limits",
  store: "Store",
  live: "Live feeds and freshness",
  webhooks: "Webhooks",
  cluster: "Cluster",
  consume: "Consuming from NATS JetStream",
} as const;
export type Group = keyof typeof GROUPS;

export interface Setting<T> {
  /** As on the command line: "--port <port>"; a switch "--allow-private-webhooks"; one on by default "--no-metrics". */
  flag: string;
  /** Its environment variable. */
  env: string;
  /** The value when neither gives one. */
  default: T;
  /** What the help shows for the default, when not the value itself (a computed one, a unit). */
  defaultText?: string;
  check: Check<T>;
  help: string;
  group: Group;
}

const setting = <T>(s: Setting<T>): Setting<T> => s;

export const LOG_LEVELS = ["fatal", "error", "warn", "info", "debug", "trace", "silent"] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];
export const MAX_WORKERS = 64;
const BIG = 1_000_000_000;

/** The settings of the commands that listen (serve, start), keyed by commander's name for each flag, in the help's order. */
export const SERVE_SETTINGS = {
  port: setting({ flag: "--port <port>", env: "PORT", default: 8080, check: wholeNumber(0, 65535), group: "serving", help: "TCP port (0 picks a free one)" }),
  host: setting({ flag: "--host <host>", env: "HOST", default: "127.0.0.1", check: nonEmpty, group: "serving", help: "address to listen on" }),
  cacheMb: setting({ flag: "--cache-mb <mb>", env: "CACHE_MB", default: 64, check: wholeNumber(0, 1_000_000), group: "serving", help: "response cache size in MB (0 turns it off)" }),
  logLevel: setting<LogLevel>({ flag: "--log-level <level>", env: "LOG_LEVEL", default: "info", check: oneOf(LOG_LEVELS), group: "serving", help: `one of ${LOG_LEVELS.join(", ")}` }),
  corsOrigin: setting({ flag: "--cors-origin <origins>", env: "CORS_ORIGIN", default: [] as string[], defaultText: "none", check: originList, group: "serving", help: 'browser origins allowed to call (comma-separated, or "*")' }),
  trustProxy: setting({ flag: "--trust-proxy <proxies>", env: "TRUST_PROXY", default: [] as string[], defaultText: "none, the TCP peer is the client", check: proxyList, group: "serving", help: "comma-separated addresses or CIDR blocks of proxies whose X-Forwarded-For names the client (per-address limits)" }),
  metrics: setting({ flag: "--no-metrics", env: "METRICS", default: true, check: onOff, group: "serving", help: "do not collect or serve Prometheus metrics" }),
  metricsPort: setting<number | undefined>({ flag: "--metrics-port <port>", env: "METRICS_PORT", default: undefined, defaultText: "the main port, for callers on this machine only", check: wholeNumber(1, 65535), group: "serving", help: "serve GET /metrics on this port instead (with --workers > 1: the sum of all workers)" }),
  metricsHost: setting({ flag: "--metrics-host <host>", env: "METRICS_HOST", default: "127.0.0.1", check: nonEmpty, group: "serving", help: "address --metrics-port listens on (0.0.0.0 for a scraper elsewhere)" }),
  headersTimeout: setting({ flag: "--headers-timeout <s>", env: "HEADERS_TIMEOUT", default: 10_000, defaultText: "10", check: seconds(0.01, 86_400), group: "serving", help: "seconds for a connection's first bytes and a request's headers" }),
  requestTimeout: setting({ flag: "--request-timeout <s>", env: "REQUEST_TIMEOUT", default: 30_000, defaultText: "30", check: seconds(0.01, 86_400), group: "serving", help: "seconds for a whole request, body included" }),
  keepAliveTimeout: setting({ flag: "--keep-alive-timeout <s>", env: "KEEP_ALIVE_TIMEOUT", default: 5_000, defaultText: "5", check: seconds(0.01, 86_400), group: "serving", help: "seconds an idle HTTP/1.1 connection is kept" }),
  idleTimeout: setting({ flag: "--idle-timeout <s>", env: "IDLE_TIMEOUT", default: 60_000, defaultText: "60", check: seconds(0.01, 86_400), group: "serving", help: "seconds an HTTP/2 session without activity is kept" }),
  shutdownTimeout: setting({ flag: "--shutdown-timeout <s>", env: "SHUTDOWN_TIMEOUT", default: 10_000, defaultText: "10", check: seconds(0.01, 86_400), group: "serving", help: "seconds SIGTERM waits for requests in flight before closing every connection" }),

  rateLimit: setting({ flag: "--rate-limit <n>", env: "RATE_LIMIT", default: 1000, check: wholeNumber(0, BIG), group: "limits", help: "requests per second per API key without a limit of its own (keys create/update --rate); 0: unlimited" }),
  anonymousRateLimit: setting({ flag: "--anonymous-rate-limit <n>", env: "ANONYMOUS_RATE_LIMIT", default: 20, check: wholeNumber(0, BIG), group: "limits", help: "requests per second per client address without a valid key; 0: unlimited" }),
  ingestRateLimit: setting({ flag: "--ingest-rate-limit <n>", env: "INGEST_RATE_LIMIT", default: 100, check: wholeNumber(0, BIG), group: "limits", help: "ingest requests (batches) per second per API key, apart from its reads; 0: unlimited" }),
  maxClockSkew: setting({ flag: "--max-clock-skew <s>", env: "MAX_CLOCK_SKEW", default: 86_400, check: wholeNumber(0, 31_536_000), group: "limits", help: "seconds a sale's or listing's time may be past this machine's clock; later ones are refused (ingest, import) and left out of appraisals (derive)" }),

  db: setting({ flag: "--db <path-or-url>", env: "MARKETDATA_DB", default: "data/marketdata.sqlite", check: nonEmpty, group: "store", help: "SQLite file, or postgres://user@host:port/database" }),
  poolSize: setting({ flag: "--pool-size <n>", env: "PG_POOL_SIZE", default: 10, check: wholeNumber(1, 1000), group: "store", help: "PostgreSQL connections per serving process (a postgres:// --db only)" }),
  storeTimeout: setting({ flag: "--store-timeout <s>", env: "STORE_TIMEOUT", default: 10_000, defaultText: "10", check: seconds(0.01, 86_400), group: "store", help: "seconds a PostgreSQL query may take before its request is answered unavailable (a postgres:// --db only)" }),

  streamsPerKey: setting({ flag: "--streams-per-key <n>", env: "STREAMS_PER_KEY", default: 1_000, check: wholeNumber(0, 1_000_000), group: "live", help: "live-feed streams (WatchSales, WatchListings, /v1/.../stream) open at once per API key, per process; 0: no limit" }),
  maxStreams: setting({ flag: "--max-streams <n>", env: "MAX_STREAMS", default: 20_000, check: wholeNumber(0, 1_000_000), group: "live", help: "live-feed streams open at once in all, per serving process; 0: no limit" }),
  listingClock: setting({ flag: "--listing-clock <s>", env: "LISTING_CLOCK", default: 1_000, defaultText: "1", check: seconds(0, 3_600), group: "live", help: "seconds between the commits that lapse listings past their expiry when nothing else is written (docs/decisions.md, \"Listings as orders\"); 0: only other writes do" }),
  deriveRefresh: setting({ flag: "--no-derive-refresh", env: "DERIVE_REFRESH", default: true, check: onOff, group: "live", help: "do not bring appraisals and rarity up to date in the background after ingest writes (run `derive` instead)" }),

  webhooks: setting({ flag: "--no-webhooks", env: "WEBHOOKS", default: true, check: onOff, group: "webhooks", help: "deliver no webhooks from this server (others on the store do; WebhookService still answers)" }),
  allowPrivateWebhooks: setting({ flag: "--allow-private-webhooks", env: "ALLOW_PRIVATE_WEBHOOKS", default: false, check: onOff, group: "webhooks", help: "allow webhooks to http:// and to loopback and private addresses (a receiver on this machine or network; SSRF otherwise)" }),
  webhookRetryHours: setting({ flag: "--webhook-retry-hours <h>", env: "WEBHOOK_RETRY_HOURS", default: 24 * 3_600_000, defaultText: "24", check: hours(0.001, 720), group: "webhooks", help: "hours a webhook's batch is retried before the webhook is marked failing" }),
  webhookConcurrency: setting({ flag: "--webhook-concurrency <n>", env: "WEBHOOK_CONCURRENCY", default: 64, check: wholeNumber(1, 10_000), group: "webhooks", help: "webhook deliveries in flight at once, per process" }),
  webhookPerDestination: setting({ flag: "--webhook-per-destination <n>", env: "WEBHOOK_PER_DESTINATION", default: 4, check: wholeNumber(1, 1000), group: "webhooks", help: "webhook deliveries in flight at once to one destination (scheme, host, port), per process" }),
  webhookTimeout: setting({ flag: "--webhook-timeout <s>", env: "WEBHOOK_TIMEOUT", default: 10_000, defaultText: "10", check: seconds(0.1, 300), group: "webhooks", help: "seconds a webhook delivery may take, answer included" }),
  webhookLeaseSeconds: setting({ flag: "--webhook-lease-seconds <s>", env: "WEBHOOK_LEASE_SECONDS", default: 15_000, defaultText: "15", check: seconds(1, 3600), group: "webhooks", help: "how long a server's hold on a webhook lasts unrenewed: another server takes it over this long after the holder dies" }),
  webhookCa: setting<string | undefined>({ flag: "--webhook-ca <file>", env: "WEBHOOK_CA", default: undefined, defaultText: "the system's only", check: pemFile, group: "webhooks", help: "PEM certificates of authorities webhook receivers' certificates may chain to, beyond the system's" }),

  workers: setting({ flag: "--workers <n>", env: "WORKERS", default: 0, defaultText: "the number of available CPUs", check: wholeNumber(1, MAX_WORKERS), group: "cluster", help: "processes serving the port (node:cluster); 1 for a single process" }),
  redis: setting<string | undefined>({ flag: "--redis <url>", env: "REDIS_URL", default: undefined, defaultText: "none, each server counts alone", check: redisUrl, group: "cluster", help: "share rate-limit counts with every server using this Redis (redis://host:port)" }),
  redisPrefix: setting({ flag: "--redis-prefix <prefix>", env: "REDIS_PREFIX", default: "marketdata:rl", check: text, group: "cluster", help: "key prefix of the counts in Redis" }),
};

export const DEMO_SCALES = ["small", "default", "large"] as const;

/** `marketdata start`'s own setting, beside SERVE_SETTINGS. */
export const START_SETTINGS = {
  demoScale: setting<(typeof DEMO_SCALES)[number]>({ flag: "--demo-scale <scale>", env: "DEMO_SCALE", default: "default", check: oneOf(DEMO_SCALES), group: "serving", help: `size of the demo store built on the first run: ${DEMO_SCALES.join(", ")}` }),
};

/** `marketdata consume`'s own settings (it takes --db and --max-clock-skew from SERVE_SETTINGS). */
export const CONSUME_SETTINGS = {
  from: setting({ flag: "--from <url>", env: "NATS_URL", default: "", check: natsUrls, group: "consume", help: "NATS server(s): nats://host:port, comma-separated; required" }),
  stream: setting({ flag: "--stream <name>", env: "NATS_STREAM", default: "MARKETDATA", check: streamName("JetStream stream"), group: "consume", help: "JetStream stream (created on SUBJECT_PREFIX.> if absent)" }),
  subjectPrefix: setting({ flag: "--subject-prefix <subject>", env: "NATS_SUBJECT_PREFIX", default: "marketdata.ingest", check: subject, group: "consume", help: "records of KIND are published to SUBJECT_PREFIX.KIND" }),
  durable: setting({ flag: "--durable <name>", env: "NATS_DURABLE", default: "marketdata", check: streamName("consumer"), group: "consume", help: "durable consumer (created if absent; shared by every process with this name)" }),
  deadLetter: setting({ flag: "--dead-letter <subject>", env: "NATS_DEAD_LETTER", default: "marketdata.dead", check: subject, group: "consume", help: "where invalid records go, with the reason in the Marketdata-Reason header (a stream STREAM_DEAD keeps them)" }),
  batch: setting({ flag: "--batch <n>", env: "CONSUME_BATCH", default: 1000, check: wholeNumber(1, MAX_BATCH_RECORDS), group: "consume", help: "records per commit at most (up to an ingest batch)" }),
  pending: setting({ flag: "--pending <n>", env: "CONSUME_PENDING", default: 1000, check: wholeNumber(1, 1_000_000), group: "consume", help: "messages pulled ahead of processing at most" }),
  inflight: setting({ flag: "--inflight <n>", env: "CONSUME_INFLIGHT", default: 4, check: wholeNumber(1, 64), group: "consume", help: "commits waiting on the store at once at most" }),
  ackWait: setting({ flag: "--ack-wait <s>", env: "CONSUME_ACK_WAIT", default: 30_000, defaultText: "30", check: seconds(1, 3600), group: "consume", help: "seconds before an unacknowledged message is delivered again (when the consumer is created)" }),
  progress: setting({ flag: "--progress <s>", env: "CONSUME_PROGRESS", default: 10_000, defaultText: "10", check: seconds(0, 3600), group: "consume", help: "seconds between progress lines on stderr (0: none)" }),
};

export type SettingsTable = Record<string, Setting<unknown>>;
export type Values<T extends SettingsTable> = { [K in keyof T]: T[K] extends Setting<infer V> ? V : never };
/** What commander gives for a table's flags: text, or a switch's boolean; absent when the command line did not name it. */
export type Given<T extends SettingsTable> = { [K in keyof T]?: string | boolean | undefined };

/** The name a setting goes by in errors: the flag and its variable, "--port (PORT)". */
export function settingName(s: Setting<unknown>): string {
  return `${s.flag.split(" ")[0]!} (${s.env})`;
}

/** Whether the setting is a switch (no value on the command line). */
export function isSwitch(s: Setting<unknown>): boolean {
  return !s.flag.includes("<");
}

/**
 * Each setting of `table`, checked: from the command line (`given`), else
 * the environment, else its default. A switch given on the command line is
 * its flag's meaning (--no-metrics: false); commander reports a --no-
 * switch not given as true, which is therefore not a choice.
 */
export function readSettings<T extends SettingsTable>(table: T, given: Given<T>, env: Readonly<Record<string, string | undefined>>): Values<T> {
  const out: Record<string, unknown> = {};
  for (const [key, s] of Object.entries(table)) {
    const name = settingName(s);
    const flag = given[key];
    if (isSwitch(s) ? flag === !s.default : flag !== undefined && flag !== true && flag !== false) {
      out[key] = isSwitch(s) ? flag : s.check(flag as string, name);
    } else if (env[s.env] !== undefined && env[s.env] !== "") {
      out[key] = s.check(env[s.env]!, name);
    } else {
      out[key] = s.default;
    }
  }
  return out as Values<T>;
}

/** Every serve setting's default, for the modules that need a fallback (tests, embedders): the table's, and nothing else. */
export const DEFAULTS: Values<typeof SERVE_SETTINGS> = Object.fromEntries(Object.entries(SERVE_SETTINGS).map(([k, s]) => [k, s.default])) as Values<typeof SERVE_SETTINGS>;
export const CONSUME_DEFAULTS: Values<typeof CONSUME_SETTINGS> = Object.fromEntries(Object.entries(CONSUME_SETTINGS).map(([k, s]) => [k, s.default])) as Values<typeof CONSUME_SETTINGS>;

/** --workers' default: every available CPU, up to the limit. */
export function defaultWorkers(): number {
  return Math.min(availableParallelism(), MAX_WORKERS);
}
