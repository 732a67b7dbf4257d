import { readFileSync } from "node:fs";
import { Command, Option } from "commander";
import {
  ConfigError,
  DEFAULT_CACHE_MB,
  DEFAULT_DB,
  DEFAULT_HOST,
  DEFAULT_LOG_LEVEL,
  DEFAULT_ANONYMOUS_RATE_LIMIT,
  DEFAULT_INGEST_RATE_LIMIT,
  DEFAULT_MAX_CLOCK_SKEW_SECONDS,
  DEFAULT_PORT,
  DEFAULT_POOL_SIZE,
  DEFAULT_RATE_LIMIT,
  DEFAULT_REDIS_PREFIX,
  DEFAULT_TIMEOUTS,
  LOG_LEVELS,
  resolveClockSkew,
  resolveServeConfig,
  type ServeFlags,
} from "../config.js";
import { KINDS } from "../ingest/kinds.js";
import {
  DEFAULT_RETRY_HOURS,
  DEFAULT_WEBHOOK_CONCURRENCY,
  DEFAULT_WEBHOOK_PER_DESTINATION,
  DEFAULT_WEBHOOK_TIMEOUT_SECONDS,
  LEASE_MS,
} from "../service/webhooks/dispatcher.js";
import { DEFAULT_MAX_STREAMS, DEFAULT_MAX_STREAMS_PER_KEY } from "../service/feed-limits.js";
import { KEY_SCOPES, type KeyScope } from "../store/ports.js";
import { errorLine } from "./errors.js";
import type { ConsumeFlags } from "../config.js";
import { JETSTREAM_DEFAULTS } from "../transport/jetstream/defaults.js";

// Each command's module is imported when that command runs: `--version`,
// `--help` and a mistyped flag load commander and this file only, and
// `keys list` never loads the server.

/** This package's version: package.json is two folders up from the source, three from the build (dist/src/cli). */
function packageVersion(): string {
  for (const path of ["../../package.json", "../../../package.json"]) {
    try {
      const pkg = JSON.parse(readFileSync(new URL(path, import.meta.url), "utf8")) as { name?: string; version?: string };
      if (pkg.name === "marketdata" && pkg.version !== undefined) return pkg.version;
    } catch {
      // not this one
    }
  }
  return "unknown";
}
const VERSION = packageVersion();

const program = new Command("marketdata")
  .description("NFT collection market data: REST /v1, Connect, gRPC and gRPC-Web from a SQLite file or PostgreSQL")
  .version(VERSION)
  // The error and its suggestion stay the last lines (the whole help after them buried them).
  .showHelpAfterError("(add --help for every option)")
  .exitOverride((err) => {
    process.exit(err.exitCode);
  });

/** --db: a SQLite file (the embedded default) or a PostgreSQL database, for every command. */
const storeOption = () =>
  new Option("--db <path-or-url>", "SQLite file, or postgres://user@host:port/database").env("MARKETDATA_DB").default(DEFAULT_DB);
const dbOption = storeOption;

program
  .command("migrate")
  .description("bring a store to this build's schema: a SQLite file (created if absent) or a PostgreSQL database (run against the primary)")
  .addOption(storeOption())
  .action(async (opts: { db: string }) => {
    await (await import("./migrate.js")).runMigrate(opts.db);
  });

/** How far past the clock sale and listing times may be: serve and start (ingest), import, derive (the model). */
const clockSkewOption = () =>
  new Option("--max-clock-skew <s>", "seconds a sale's or listing's time may be past this machine's clock; later ones are refused (ingest, import) and left out of appraisals (derive)")
    .env("MAX_CLOCK_SKEW")
    .default(String(DEFAULT_MAX_CLOCK_SKEW_SECONDS));

/** http, loopback and private destinations for webhooks: serve and start, webhooks create. */
const allowPrivateOption = () =>
  new Option("--allow-private-webhooks", "allow webhooks to http:// and to loopback and private addresses (a receiver on this machine or network; SSRF otherwise)");

/** The options of every command that listens. */
const listening = (command: Command) =>
  command
    .addOption(dbOption())
    .addOption(new Option("--port <port>", "TCP port (0 picks a free one)").env("PORT").default(String(DEFAULT_PORT)))
    .addOption(new Option("--host <host>", "address to listen on").env("HOST").default(DEFAULT_HOST))
    .addOption(
      new Option("--workers <n>", "processes serving the port (node:cluster), default: the number of available CPUs; 1 for a single process").env(
        "WORKERS",
      ),
    )
    .addOption(
      new Option("--cache-mb <mb>", "response cache size in MB (0 turns it off)").env("CACHE_MB").default(String(DEFAULT_CACHE_MB)),
    )
    .addOption(
      new Option("--log-level <level>", `one of ${LOG_LEVELS.join(", ")}`).env("LOG_LEVEL").default(DEFAULT_LOG_LEVEL),
    )
    .addOption(
      new Option("--rate-limit <n>", "requests per second per API key without a limit of its own (keys create/update --rate); 0: unlimited")
        .env("RATE_LIMIT")
        .default(String(DEFAULT_RATE_LIMIT)),
    )
    .addOption(
      new Option("--anonymous-rate-limit <n>", "requests per second per client address without a valid key; 0: unlimited")
        .env("ANONYMOUS_RATE_LIMIT")
        .default(String(DEFAULT_ANONYMOUS_RATE_LIMIT)),
    )
    .addOption(
      new Option("--ingest-rate-limit <n>", "ingest requests (batches) per second per API key, apart from its reads; 0: unlimited")
        .env("INGEST_RATE_LIMIT")
        .default(String(DEFAULT_INGEST_RATE_LIMIT)),
    )
    .addOption(
      new Option("--streams-per-key <n>", "live-feed streams (WatchSales, WatchListings, /v1/.../stream) open at once per API key, per process; 0: no limit")
        .env("STREAMS_PER_KEY")
        .default(String(DEFAULT_MAX_STREAMS_PER_KEY)),
    )
    .addOption(
      new Option("--max-streams <n>", "live-feed streams open at once in all, per serving process; 0: no limit").env("MAX_STREAMS").default(String(DEFAULT_MAX_STREAMS)),
    )
    .addOption(clockSkewOption())
    .addOption(new Option("--redis <url>", "share rate-limit counts with every server using this Redis (redis://host:port)").env("REDIS_URL"))
    .addOption(new Option("--redis-prefix <prefix>", "key prefix of the counts in Redis").default(DEFAULT_REDIS_PREFIX))
    .addOption(new Option("--headers-timeout <s>", "seconds for a connection's first bytes and a request's headers").default(String(DEFAULT_TIMEOUTS.headers)))
    .addOption(new Option("--request-timeout <s>", "seconds for a whole request, body included").default(String(DEFAULT_TIMEOUTS.request)))
    .addOption(new Option("--keep-alive-timeout <s>", "seconds an idle HTTP/1.1 connection is kept").default(String(DEFAULT_TIMEOUTS.keepAlive)))
    .addOption(new Option("--idle-timeout <s>", "seconds an HTTP/2 session without activity is kept").default(String(DEFAULT_TIMEOUTS.idle)))
    .addOption(
      new Option("--store-timeout <s>", "seconds a PostgreSQL query may take before its request is answered unavailable (a postgres:// --db only)").default(
        String(DEFAULT_TIMEOUTS.store),
      ),
    )
    .addOption(
      new Option("--pool-size <n>", "PostgreSQL connections per serving process (a postgres:// --db only)").env("PG_POOL_SIZE").default(String(DEFAULT_POOL_SIZE)),
    )
    .addOption(new Option("--cors-origin <origins>", 'browser origins allowed to call (comma-separated, or "*"); default: none').env("CORS_ORIGIN"))
    .addOption(new Option("--no-metrics", "do not collect or serve Prometheus metrics"))
    .addOption(new Option("--no-derive-refresh", "do not bring appraisals and rarity up to date in the background after ingest writes (run `derive` instead)"))
    .addOption(
      new Option(
        "--metrics-port <port>",
        "serve GET /metrics on this port instead of the main one, where it answers callers on this machine only (with --workers > 1: the sum of all workers)",
      ).env("METRICS_PORT"),
    )
    .addOption(new Option("--metrics-host <host>", "address --metrics-port listens on (default 127.0.0.1; 0.0.0.0 for a scraper elsewhere)").env("METRICS_HOST"))
    .addOption(
      new Option(
        "--trust-proxy <proxies>",
        "comma-separated addresses or CIDR blocks of proxies whose X-Forwarded-For names the client (per-address limits); default: none, the TCP peer is the client",
      ).env("TRUST_PROXY"),
    )
    .addOption(
      new Option("--shutdown-timeout <s>", "seconds SIGTERM waits for requests in flight before closing every connection").default(
        String(DEFAULT_TIMEOUTS.shutdown),
      ),
    )
    .addOption(new Option("--no-webhooks", "deliver no webhooks from this server (others on the store do; WebhookService still answers)"))
    .addOption(allowPrivateOption())
    .addOption(
      new Option("--webhook-retry-hours <h>", "hours a webhook's batch is retried before the webhook is marked failing").default(String(DEFAULT_RETRY_HOURS)),
    )
    .addOption(new Option("--webhook-concurrency <n>", "webhook deliveries in flight at once, per process").default(String(DEFAULT_WEBHOOK_CONCURRENCY)))
    .addOption(
      new Option("--webhook-per-destination <n>", "webhook deliveries in flight at once to one destination (scheme, host, port), per process").default(
        String(DEFAULT_WEBHOOK_PER_DESTINATION),
      ),
    )
    .addOption(new Option("--webhook-timeout <s>", "seconds a webhook delivery may take, answer included").default(String(DEFAULT_WEBHOOK_TIMEOUT_SECONDS)))
    .addOption(
      new Option("--webhook-lease-seconds <s>", "how long a server's hold on a webhook lasts unrenewed: another server takes it over this long after the holder dies").default(
        String(LEASE_MS / 1000),
      ),
    )
    .addOption(new Option("--webhook-ca <file>", "PEM certificates of authorities webhook receivers' certificates may chain to, beyond the system's"));

listening(program.command("serve").description("serve the store on one port for every protocol: reads, live feeds, and writes through the ingest API"))
  .action(async (opts: ServeFlags) => {
    const config = resolveServeConfig(opts);
    await (await import("./serve.js")).serveUntilSignalled(config);
  });

const keys = program.command("keys").description("issue, list, update and revoke API keys");
keys
  .command("create")
  .description("issue a new API key; prints it alone on the last line of stdout")
  .addOption(storeOption())
  .requiredOption("--name <name>", "who or what the key is for")
  .option("--rate <n>", 'requests per second for this key, or "default" (the server\'s --rate-limit)', "default")
  .addOption(
    new Option("--scope <scope>", "read: the read API; ingest: also write through the ingest API; admin: everything")
      .choices(KEY_SCOPES)
      .default("read"),
  )
  .action(async (opts: { db: string; name: string; rate: string; scope: KeyScope }) =>
    (await import("./keys.js")).createKey(opts.db, opts.name, opts.rate, opts.scope),
  );
keys
  .command("update")
  .description("change a key's rate limit; running servers apply it within a second")
  .addOption(storeOption())
  .argument("<id>", "key id, from `keys list`")
  .option("--rate <n>", 'requests per second, or "default" (the server\'s --rate-limit)')
  .action(async (id: string, opts: { db: string; rate?: string }) => (await import("./keys.js")).updateKey(opts.db, id, opts.rate));
keys
  .command("list")
  .description("show id, name, scope, created and revoked times and rate (never the keys)")
  .addOption(storeOption())
  .action(async (opts: { db: string }) => (await import("./keys.js")).listKeys(opts.db));
keys
  .command("revoke")
  .description("revoke a key by id; servers refuse it from their next request")
  .addOption(storeOption())
  .argument("<id>", "key id, from `keys list`")
  .action(async (id: string, opts: { db: string }) => (await import("./keys.js")).revokeKey(opts.db, id));

const webhooks = program
  .command("webhooks")
  .description("push sales, listings, offers and transfers to HTTPS endpoints: create, list, pause, resume, delete, rotate-secret, replay, log");
webhooks
  .command("create")
  .description("subscribe a URL to collections' events; prints the signing secret alone on the last line of stdout")
  .addOption(storeOption())
  .requiredOption("--url <url>", "https:// endpoint that receives batches of events (POST, Standard Webhooks signatures)")
  .requiredOption("--collections <addresses>", "comma-separated contract addresses (up to 100)")
  .option("--types <types>", "comma-separated: sale, listing, offer, transfer (default: all four)")
  .requiredOption("--key-id <id>", "the API key it delivers for (from `keys list`): revoking it disables the webhook")
  .option("--from <from>", 'where delivery starts: "now" (default), a position, or a time like 2026-11-26T10:00:00Z')
  .addOption(allowPrivateOption())
  .action(async (opts: { db: string; url: string; collections: string; types?: string; keyId: string; from?: string; allowPrivateWebhooks?: boolean }) =>
    (await import("./webhooks.js")).createWebhook(opts),
  );
webhooks
  .command("list")
  .description("show every webhook: state, URL, types, collections, key and position (never the secrets)")
  .addOption(storeOption())
  .action(async (opts: { db: string }) => (await import("./webhooks.js")).listWebhooks(opts));
for (const [name, description] of [
  ["pause", "stop delivering a webhook; its position is kept"],
  ["resume", "deliver a paused, failing or disabled webhook again, from its position"],
  ["delete", "remove a webhook and its delivery log"],
] as const) {
  webhooks
    .command(name)
    .description(description)
    .addOption(storeOption())
    .argument("<id>", "webhook id, from `webhooks list`")
    .action(async (id: string, opts: { db: string }) => (await import("./webhooks.js")).changeWebhook(opts, id, name));
}
webhooks
  .command("rotate-secret")
  .description("issue a new signing secret; the old one also signs for 24 hours; prints the new one alone on stdout")
  .addOption(storeOption())
  .argument("<id>", "webhook id")
  .action(async (id: string, opts: { db: string }) => (await import("./webhooks.js")).rotateWebhookSecret(opts, id));
webhooks
  .command("replay")
  .description("send events again from a position (every event at or above it) or a time (every event committed since)")
  .addOption(storeOption())
  .argument("<id>", "webhook id")
  .requiredOption("--from <from>", "a position (from an event's `position`) or a time like 2026-11-26T10:00:00Z")
  .action(async (id: string, opts: { db: string; from: string }) => (await import("./webhooks.js")).replayWebhook(opts, id, opts.from));
webhooks
  .command("log")
  .description("a webhook's last delivery attempts, newest first: time, batch, status, latency, error")
  .addOption(storeOption())
  .argument("<id>", "webhook id")
  .option("--limit <n>", "attempts shown (1 to 1000)", "20")
  .action(async (id: string, opts: { db: string; limit: string }) => (await import("./webhooks.js")).webhookLog(opts, id, opts.limit));

program
  .command("import")
  .description("import an NDJSON file of one kind, atomically (creates the store if absent)")
  .addOption(dbOption())
  .option("--skip-invalid", "import the valid lines; write rejected ones with reasons to FILE.rejects.ndjson", false)
  .option("--follow", "keep reading lines appended to FILE (stdin: to its end) and commit them as they arrive, 200 ms at most behind; Ctrl-C commits what is pending and stops", false)
  .addOption(clockSkewOption())
  .argument("<kind>", `one of: ${KINDS.join(", ")}`)
  .argument("<file>", "NDJSON file, or - for stdin")
  .action(async (kind: string, file: string, opts: { db: string; skipInvalid: boolean; follow: boolean; maxClockSkew: string }) => {
    const cmd = { db: opts.db, kind, file, skipInvalid: opts.skipInvalid, maxClockSkewSeconds: resolveClockSkew(opts.maxClockSkew) };
    if (opts.follow) await (await import("./follow.js")).runFollow(cmd);
    else await (await import("./import.js")).runImport(cmd);
  });

program
  .command("consume")
  .description("ingest NDJSON records from NATS JetStream (SUBJECT_PREFIX.KIND) through a durable pull consumer that any number of these processes share; Ctrl-C commits what was taken and stops")
  .addOption(dbOption())
  .addOption(new Option("--from <url>", "NATS server(s): nats://host:port, comma-separated").env("NATS_URL").makeOptionMandatory())
  .option("--stream <name>", "JetStream stream (created on SUBJECT_PREFIX.> if absent)", JETSTREAM_DEFAULTS.stream)
  .option("--subject-prefix <subject>", "records of KIND are published to SUBJECT_PREFIX.KIND", JETSTREAM_DEFAULTS.subjectPrefix)
  .option("--durable <name>", "durable consumer (created if absent; shared by every process with this name)", JETSTREAM_DEFAULTS.durable)
  .option("--dead-letter <subject>", "where invalid records go, with the reason in the Marketdata-Reason header (a stream STREAM_DEAD keeps them)", JETSTREAM_DEFAULTS.deadLetter)
  .option("--batch <n>", "records per commit at most", String(JETSTREAM_DEFAULTS.batch))
  .option("--pending <n>", "messages pulled ahead of processing at most", String(JETSTREAM_DEFAULTS.pending))
  .option("--inflight <n>", "commits waiting on the store at once at most", String(JETSTREAM_DEFAULTS.inflight))
  .option("--ack-wait <s>", "seconds before an unacknowledged message is delivered again (when the consumer is created)", String(JETSTREAM_DEFAULTS.ackWaitSeconds))
  .option("--progress <s>", "seconds between progress lines on stderr (0: none)", "10")
  .addOption(clockSkewOption())
  .action(async (opts: ConsumeFlags & { db: string; maxClockSkew: string }) => {
    await (await import("./consume.js")).runConsume({ ...opts, maxClockSkewSeconds: resolveClockSkew(opts.maxClockSkew) });
  });

program
  .command("demo")
  .description("build a deterministic, realistic demo data set through import and derive")
  .addOption(dbOption())
  .option("--seed <n>", "random seed: the same seed gives the same store", "1")
  .addOption(new Option("--scale <scale>", "data set size").choices(["small", "default", "large"]).default("default"))
  .action(async (opts: { db: string; seed: string; scale: string }) => {
    await (await import("./demo.js")).runDemo(opts.db, opts.seed, opts.scale);
  });

listening(
  program
    .command("start")
    .description("serve the default store, building the demo store and a demo key on the first run (npm start)"),
)
  .addOption(new Option("--demo-scale <scale>", "size of the demo store built on the first run").choices(["small", "default", "large"]).default("default"))
  .action(async (opts: ServeFlags & { demoScale: string }) => {
    const config = resolveServeConfig(opts);
    await (await import("./start.js")).runStart(config, opts.demoScale);
  });

program
  .command("derive")
  .description(
    "compute rarity (OpenRarity method) and appraisals for every collection with tokens or sales; imported rows are kept, never overwritten or deleted",
  )
  .addOption(dbOption())
  .option("--collection <address>", "only this collection")
  .option("--replace-imported", "overwrite imported appraisals and rarity with computed ones (by default imported rows win)", false)
  .addOption(clockSkewOption())
  .action(async (opts: { db: string; collection?: string; replaceImported: boolean; maxClockSkew: string }) => {
    await (await import("./derive.js")).runDerive(opts.db, opts.collection, opts.replaceImported, resolveClockSkew(opts.maxClockSkew));
  });

const stats = program.command("stats").description("maintain the aggregates collection stats are answered from, and see where the store's disk goes");
stats
  .command("rebuild")
  .description("recompute the stats aggregates from the raw sales (after a manual repair of the sales table)")
  .addOption(dbOption())
  .option("--collection <address>", "only this collection")
  .option("--check", "change nothing; exit 1 if any aggregate differs from the sales", false)
  .action(async (opts: { db: string; collection?: string; check: boolean }) => {
    await (await import("./stats.js")).runStatsRebuild(opts.db, opts);
  });
stats
  .command("disk")
  .description("every table and index of the store by its size on disk, largest first (SQLite: after a checkpoint)")
  .addOption(dbOption())
  .option("--json", "one JSON object: { total, parts: [{ name, table, bytes, rows }] }", false)
  .action(async (opts: { db: string; json: boolean }) => {
    await (await import("./stats.js")).runStatsDisk(opts.db, opts.json);
  });

try {
  await program.parseAsync(process.argv);
} catch (err) {
  const { line, stack } = await errorLine(err);
  process.stderr.write(`marketdata: ${line}\n`);
  // The stack of an unexpected error only on request.
  if (stack !== undefined && process.env.MARKETDATA_DEBUG === "1") process.stderr.write(`${stack}\n`);
  process.exit(1);
}
