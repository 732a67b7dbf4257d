import { readFileSync } from "node:fs";
import { Command, Option } from "commander";
import { consumeConfig, type ConsumeFlags } from "../config/consume.js";
import { resolveServeConfig, type ServeFlags } from "../config/serve.js";
import { CONSUME_SETTINGS, readSettings, SERVE_SETTINGS, START_SETTINGS } from "../config/settings.js";
import { KINDS } from "../domain/kinds/index.js";
import { EXPORT_KINDS } from "../domain/export-kinds.js";
import { KEY_SCOPES, type KeyScope } from "../store/ports/keys.js";
import { errorLine } from "./errors.js";
import { addSettings, resolveClockSkew, resolveDb, settingOption } from "./setting-options.js";

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
const storeOption = () => settingOption(SERVE_SETTINGS.db);

// Every command's --db is resolved before its action runs: the command
// line, else MARKETDATA_DB, else the default (serve and start take it with
// the rest of their settings).
program.hook("preAction", (_program, command) => {
  if (command.options.some((o) => o.attributeName() === "db")) command.setOptionValue("db", resolveDb(command.getOptionValue("db") as string | undefined, process.env));
});

program
  .command("migrate")
  .description("bring a store to this build's schema: a SQLite file (created if absent) or a PostgreSQL database (run against the primary)")
  .addOption(storeOption())
  .action(async (opts: { db: string }) => {
    await (await import("./migrate.js")).runMigrate(opts.db);
  });

/** How far past the clock sale and listing times may be: serve and start (ingest), import, derive (the model). */
const clockSkewOption = () => settingOption(SERVE_SETTINGS.maxClockSkew);

/** http, loopback and private destinations for webhooks: serve and start, webhooks create. */
const allowPrivateOption = () => settingOption(SERVE_SETTINGS.allowPrivateWebhooks);

/** The options of every command that listens: the whole settings table, grouped in the help. */
const listening = (command: Command) => addSettings(command, SERVE_SETTINGS);

listening(program.command("serve").description("serve the store on one port for every protocol: reads, live feeds, and writes through the ingest API"))
  .action(async (opts: ServeFlags) => {
    const config = resolveServeConfig(opts, process.env);
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
  .option("--chain <name>", "the chain of the collections (docs/chains.md)", "ethereum")
  .option("--types <types>", "comma-separated: sale, listing, offer, transfer, token (a token whose record was written; default: the first four)")
  .requiredOption("--key-id <id>", "the API key it delivers for (from `keys list`): revoking it disables the webhook")
  .option("--from <from>", 'where delivery starts: "now" (default), a position, or a time like 2026-11-26T10:00:00Z')
  .option("--finality <finality>", '"final": each sale and transfer once its block is final, and no removal (docs/chains.md); default: every event as committed')
  .addOption(allowPrivateOption())
  .action(async (opts: { db: string; url: string; collections: string; chain: string; types?: string; keyId: string; from?: string; finality?: string; allowPrivateWebhooks?: boolean }) =>
    (await import("./webhooks.js")).createWebhook({
      ...opts,
      // The flag, else ALLOW_PRIVATE_WEBHOOKS: the same setting serve takes.
      allowPrivateWebhooks: readSettings({ allowPrivateWebhooks: SERVE_SETTINGS.allowPrivateWebhooks }, opts, process.env).allowPrivateWebhooks,
    }),
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
  .addOption(storeOption())
  .option("--skip-invalid", "import the valid lines; write rejected ones with reasons to FILE.rejects.ndjson", false)
  .option("--follow", "keep reading lines appended to FILE (stdin: to its end) and commit them as they arrive, 200 ms at most behind; Ctrl-C commits what is pending and stops", false)
  .addOption(clockSkewOption())
  .argument("<kind>", `one of: ${KINDS.join(", ")}`)
  .argument("<file>", "NDJSON file, or - for stdin")
  .action(async (kind: string, file: string, opts: { db: string; skipInvalid: boolean; follow: boolean; maxClockSkew: string }) => {
    const cmd = { db: opts.db, kind, file, skipInvalid: opts.skipInvalid, maxClockSkewSeconds: resolveClockSkew(opts.maxClockSkew, process.env) };
    if (opts.follow) await (await import("./follow.js")).runFollow(cmd);
    else await (await import("./import.js")).runImport(cmd);
  });

program
  .command("export")
  .description("write a collection's records of one kind as the NDJSON `marketdata import KIND` reads, from a store (--db) or a running server (--url), chunk by chunk; each chunk's position is reported, and an export stopped half way goes on with --position")
  .addOption(storeOption())
  .requiredOption("--contract <address>", "the collection's contract address")
  .option("--chain <chain>", "the collection's chain (default ethereum)", "")
  .option("--out <file>", "where the lines go: a file (appended to with --position), or - for stdout", "-")
  .option("--position <position>", "go on from the position an earlier export reported (only what comes after it)", "")
  .option("--url <url>", "read from this server's GET /v1/export/KIND instead of --db (e.g. http://127.0.0.1:8080)")
  .addOption(new Option("--key <key>", "the API key for --url").env("MARKETDATA_API_KEY"))
  .argument("<kind>", `one of: ${EXPORT_KINDS.join(", ")}`)
  .action(async (kind: string, opts: { db: string; contract: string; chain: string; out: string; position: string; url?: string; key?: string }) => {
    await (await import("./export.js")).runExport({ kind, ...opts });
  });

const consume = program
  .command("consume")
  .description("ingest NDJSON records from NATS JetStream (SUBJECT_PREFIX.KIND) through a durable pull consumer that any number of these processes share; Ctrl-C commits what was taken and stops")
  .addOption(storeOption())
  .addOption(clockSkewOption());
addSettings(consume, CONSUME_SETTINGS).action(async (opts: ConsumeFlags & { db: string; maxClockSkew?: string }) => {
  const options = consumeConfig(opts, process.env);
  await (await import("./consume.js")).runConsume({ db: opts.db, maxClockSkewSeconds: resolveClockSkew(opts.maxClockSkew, process.env), options });
});

program
  .command("demo")
  .description("build a deterministic, realistic demo data set through import and derive")
  .addOption(storeOption())
  .option("--seed <n>", "random seed: the same seed gives the same store", "1")
  .addOption(new Option("--scale <scale>", "data set size").choices(["small", "default", "large"]).default("default"))
  .option("--end <time>", "the market's last instant, unix seconds or ISO 8601 (default: now, so every window shows a live market); the same seed and end give the same store")
  .action(async (opts: { db: string; seed: string; scale: string; end?: string }) => {
    await (await import("./demo.js")).runDemo(opts.db, opts.seed, opts.scale, opts.end);
  });

listening(
  program
    .command("start")
    .description("serve the default store, building the demo store and a demo key on the first run (npm start)"),
)
  .addOption(settingOption(START_SETTINGS.demoScale))
  .action(async (opts: ServeFlags & { demoScale?: string }) => {
    const config = resolveServeConfig(opts, process.env);
    const { demoScale } = readSettings(START_SETTINGS, { demoScale: opts.demoScale }, process.env);
    await (await import("./start.js")).runStart(config, demoScale);
  });

program
  .command("derive")
  .description(
    "compute rarity (OpenRarity method) and appraisals for every collection with tokens or sales; imported rows are kept, never overwritten or deleted",
  )
  .addOption(storeOption())
  .option("--collection <address>", "only this collection")
  .option("--chain <name>", "the chain of --collection (docs/chains.md)", "ethereum")
  .option("--replace-imported", "overwrite imported appraisals and rarity with computed ones (by default imported rows win)", false)
  .addOption(clockSkewOption())
  .action(async (opts: { db: string; collection?: string; chain: string; replaceImported: boolean; maxClockSkew: string }) => {
    await (await import("./derive.js")).runDerive(opts.db, opts.collection, opts.replaceImported, resolveClockSkew(opts.maxClockSkew, process.env), opts.chain);
  });

const stats = program.command("stats").description("maintain the aggregates collection stats are answered from, and see where the store's disk goes");
stats
  .command("rebuild")
  .description("recompute the stats aggregates from the raw sales (after a manual repair of the sales table)")
  .addOption(storeOption())
  .option("--collection <address>", "only this collection")
  .option("--check", "change nothing; exit 1 if any aggregate differs from the sales", false)
  .action(async (opts: { db: string; collection?: string; check: boolean }) => {
    await (await import("./stats.js")).runStatsRebuild(opts.db, opts);
  });
stats
  .command("disk")
  .description("every table and index of the store by its size on disk, largest first (SQLite: after a checkpoint)")
  .addOption(storeOption())
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
