// npm run bench:import: bulk import speed of sales NDJSON through the real
// CLI (file read, checks, writes, commit), on SQLite and on PostgreSQL in
// one run, engines alternating each round: the generated collection of N
// sales (bench:stats's and bench:engines's) into an empty store, then the
// same file again into that store (every row unchanged: the row-by-row
// merge, where an empty store takes the bulk path); and beside each, the
// same file loaded by the engine's own tools (engine-bulk.ts), the ceiling
// import is held against.
import { createHash } from "node:crypto";
import { once } from "node:events";
import { createReadStream, createWriteStream, existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createInterface } from "node:readline";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Command } from "commander";
import { hasTool, postgresBulkLoad, sqliteBulkLoad } from "./engine-bulk.js";
import { log, median } from "./harness.js";
import { listingLines, transferLines, writeLines, writeSales } from "./sales-file.js";
import { cliImportRate, withRoundStore } from "./round-store.js";

const opts = new Command("bench:import")
  .description("bulk import speed of sales NDJSON through the CLI, SQLite beside PostgreSQL")
  .option("--sales <n>", "sales in the file", "1000000")
  .option("--engines <list>", "sqlite,postgres", "sqlite,postgres")
  .option("--rounds <n>", "rounds, engines alternating", "3")
  .option("--pg <url>", "PostgreSQL server (a database of its own is created and dropped each round)", "postgres://postgres@127.0.0.1:5432/postgres")
  .option("--no-engine-path", "skip the engine's own bulk path (the sqlite3 shell's .import, psql's \\copy: engine-bulk.ts)")
  .option("--chain-fields", "import the same sales with chain and blockHash in every line too, alternating with the plain file (issue 52: within 0.95)")
  .option("--listings <n>", "with --chain-fields: also n listings, plain and with chain, block and blockHash in every line (an on-chain order's event)")
  .option("--final", "with --listings: the on-chain listings' blocks already final (a finality sent first: a backfill, which keeps no order log), not pending (live)")
  .option("--baseline <dir>", "also import with a built checkout of another revision, alternating with this build (its src/bin/marketdata.js and dist/; see bench:serve-ab --help)")
  .option("--transfers <n>", "instead of sales: n transfers of n/20 tokens into an empty store (bulk), then n/10 more into it (row by row, the triggers' path), this build against --baseline's")
  .option("--prices", "first import ETH's USD price every hour of the sales' span into each store (docs/money.md: every sale then has a point, its dollars kept with the series)")
  .parse()
  .opts<{ sales: string; engines: string; rounds: string; pg: string; enginePath: boolean; chainFields?: boolean; listings?: string; final?: boolean; baseline?: string; prices?: boolean; transfers?: string }>();
const baselineBin = opts.baseline === undefined ? undefined : join(opts.baseline, "src/bin/marketdata.js");
if (baselineBin !== undefined && !existsSync(join(opts.baseline!, "dist/src/cli/main.js"))) {
  process.stderr.write(`bench:import: ${opts.baseline} has no built command (dist/): build it first\n`);
  process.exit(2);
}

const ADDRESS = "0x00000000000000000000000000000000000e4c11";
const n = Number(opts.sales);
const engines = opts.engines.split(",");
const dir = mkdtempSync(join(tmpdir(), "marketdata-bench-import-"));
const file = join(dir, "sales.ndjson");
/** ETH's hourly USD price over the generated sales' two years (sales-file.ts saleLines), for --prices. */
const pricesFile = join(dir, "prices.ndjson");

/** The CLI's own rows/s figure of one import (by this build, or by `bin`'s) of `from` (the sales file, or a file of `kind`). */
const importRate = (db: string, bin?: string, from = file, kind = "sales"): number => cliImportRate(db, from, kind, bin);

/** A store of its own for one round: a new SQLite file, or a new PostgreSQL database. */
const withStore = (engine: string, round: number, fn: (db: string) => void | Promise<void>) => withRoundStore(engine, { dir, pgUrl: opts.pg, name: "import" }, round, fn);

try {
  if (opts.transfers !== undefined) {
    await transferRounds(Number(opts.transfers));
    rmSync(dir, { recursive: true, force: true });
    process.exit(0);
  }
  log(`generating ${n} sales...`);
  await writeSales(file, n, 11, ADDRESS);
  if (opts.prices === true) {
    await writeLines(pricesFile, Array.from({ length: 2 * 365 * 24 + 1 }, (_, i) => JSON.stringify({ currency: "ETH", minute: 1_640_995_200 + i * 3600, usd: (2000 + (i % 97) * 7.31).toFixed(2) })));
  }
  if (opts.chainFields) {
    await chainFieldsRounds("sales", file, n, (sale) => ({ chain: "base", blockHash: blockHashOf(sale.block as number) }));
    if (opts.listings !== undefined) {
      const listings = join(dir, "listings.ndjson");
      await writeLines(listings, listingLines(Number(opts.listings), 11, ADDRESS));
      // Each listing as an on-chain order's event of its own block: pending (each logged: docs/chains.md, "Orders taken back"), or final.
      const finality = join(dir, "finality.ndjson");
      writeFileSync(finality, `${JSON.stringify({ chain: "base", block: 18_000_000 })}\n`);
      await chainFieldsRounds("listings", listings, Number(opts.listings), (_, i) => ({ chain: "base", block: 17_000_000 + i, blockHash: blockHashOf(17_000_000 + i) }),
        opts.final === true ? (db) => void importRate(db, undefined, finality, "finality") : undefined);
    }
    // Its own rounds only (the finally below is not reached through exit).
    rmSync(dir, { recursive: true, force: true });
    process.exit(0);
  }
  const rates: Record<string, { fresh: number[]; again: number[]; engine: number[]; baseline: number[]; baselineAgain: number[] }> = {};
  const withEngine = opts.enginePath && engines.every((e) => {
    if (hasTool(e as "sqlite" | "postgres")) return true;
    log(`no ${e === "sqlite" ? "sqlite3" : "psql"} on this machine: the engine's own bulk path is not measured (apt-get install -y ${e === "sqlite" ? "sqlite3" : "postgresql-client"})`);
    return false;
  });
  for (let round = 1; round <= Number(opts.rounds); round++) {
    for (const engine of round % 2 === 1 ? engines : [...engines].reverse()) {
      const r = (rates[engine] ??= { fresh: [], again: [], engine: [], baseline: [], baselineAgain: [] });
      // The baseline first in odd rounds, second in even ones.
      const builds = baselineBin === undefined ? [undefined] : round % 2 === 1 ? [baselineBin, undefined] : [undefined, baselineBin];
      for (const bin of builds) {
        await withStore(engine, round, (db) => {
          // The points before the sales they price, as a feed sends them: not timed.
          if (opts.prices === true) {
            try {
              importRate(db, bin, pricesFile, "prices");
            } catch (e) {
              // A baseline from before price points (the targets compare with the build before wash flags and dollars): none to keep.
              if (bin === undefined || !/got "prices"/.test(String(e))) throw e;
            }
          }
          const fresh = importRate(db, bin);
          const again = importRate(db, bin);
          (bin === undefined ? r.fresh : r.baseline).push(fresh);
          (bin === undefined ? r.again : r.baselineAgain).push(again);
          log(`round ${round} ${engine}${bin === undefined ? "" : " (baseline)"}: ${fresh} rows/s into an empty store, ${again} rows/s the same file again`);
        });
      }
      // The engine's own tools, on a store of their own, right after: the same file, the same schema.
      if (withEngine) {
        await withStore(engine, round + 1000, async (db) => {
          const seconds = engine === "sqlite" ? sqliteBulkLoad(db, file, n, ADDRESS) : await postgresBulkLoad(db, file, n, ADDRESS);
          r.engine.push(Math.round(n / seconds));
          log(`round ${round} ${engine}: the engine's own bulk path ${r.engine.at(-1)} rows/s`);
        });
      }
    }
  }
  log(`\n| engine | ${n} sales into an empty store, rows/s (median; rounds) | the same file again (all unchanged) |${withEngine ? " the engine's own bulk path, rows/s | import / engine |" : ""}`);
  log(`|---|---|---|${withEngine ? "---|---|" : ""}`);
  for (const [engine, r] of Object.entries(rates)) {
    const own = withEngine ? ` ${median(r.engine)} (${r.engine.join(", ")}) | ${(median(r.fresh) / median(r.engine)).toFixed(2)} |` : "";
    log(`| ${engine} | ${median(r.fresh)} (${r.fresh.join(", ")}) | ${median(r.again)} (${r.again.join(", ")}) |${own}`);
  }
  if (baselineBin !== undefined) {
    log(`\n| engine | baseline (${opts.baseline}) into an empty store | this build | this / baseline | baseline, the same file again | this build | this / baseline |`);
    log("|---|---|---|---|---|---|---|");
    for (const [engine, r] of Object.entries(rates)) {
      const [b, t, ba, ta] = [median(r.baseline), median(r.fresh), median(r.baselineAgain), median(r.again)];
      log(`| ${engine} | ${b} | ${t} | ${(t / b).toFixed(2)} | ${ba} | ${ta} | ${(ta / ba).toFixed(2)} |`);
    }
  }
} finally {
  rmSync(dir, { recursive: true, force: true });
}

/**
 * --transfers: n transfers into an empty store (SQLite's bulk path: its
 * balances and owners summed once at the end), then n/10 more into that
 * store (row by row: the triggers per transfer), by this build and by
 * --baseline's, the order alternating each round, on each engine.
 */
async function transferRounds(count: number): Promise<void> {
  const tokens = Math.max(1, Math.floor(count / 20));
  const [first, more] = [join(dir, "transfers.ndjson"), join(dir, "transfers-more.ndjson")];
  await writeLines(first, transferLines(count, 0, tokens, ADDRESS));
  await writeLines(more, transferLines(Math.floor(count / 10), count, tokens, ADDRESS));
  const rates: Record<string, Record<"this" | "baseline", { fresh: number[]; more: number[] }>> = {};
  let store = 0;
  for (let round = 1; round <= Number(opts.rounds); round++) {
    for (const engine of round % 2 === 1 ? engines : [...engines].reverse()) {
      const r = (rates[engine] ??= { this: { fresh: [], more: [] }, baseline: { fresh: [], more: [] } });
      const builds = baselineBin === undefined ? [undefined] : round % 2 === 1 ? [baselineBin, undefined] : [undefined, baselineBin];
      for (const bin of builds) {
        await withStore(engine, ++store, (db) => {
          const of = r[bin === undefined ? "this" : "baseline"];
          of.fresh.push(importRate(db, bin, first, "transfers"));
          of.more.push(importRate(db, bin, more, "transfers"));
          log(`round ${round} ${engine}${bin === undefined ? "" : " (baseline)"}: ${of.fresh.at(-1)} rows/s into an empty store, ${of.more.at(-1)} rows/s the next ${Math.floor(count / 10)}`);
        });
      }
    }
  }
  log(`\n| engine | ${count} transfers into an empty store, rows/s (median; rounds) | ${Math.floor(count / 10)} more, row by row |${baselineBin === undefined ? "" : " baseline, empty store | baseline, more | this / baseline (empty; more) |"}`);
  log(`|---|---|---|${baselineBin === undefined ? "" : "---|---|---|"}`);
  for (const [engine, { this: t, baseline: b }] of Object.entries(rates)) {
    const base = baselineBin === undefined ? "" : ` ${median(b.fresh)} (${b.fresh.join(", ")}) | ${median(b.more)} (${b.more.join(", ")}) | ${(median(t.fresh) / median(b.fresh)).toFixed(2)}; ${(median(t.more) / median(b.more)).toFixed(2)} |`;
    log(`| ${engine} | ${median(t.fresh)} (${t.fresh.join(", ")}) | ${median(t.more)} (${t.more.join(", ")}) |${base}`);
  }
}

/** A block's made-up hash: each block its own. */
function blockHashOf(block: number): string {
  return `0x${createHash("sha256").update(String(block)).digest("hex")}`;
}

/**
 * --chain-fields: the same records of `kind` (from `plain`, n of them) with
 * the fields `added` gives each (its chain and block hash) in every line,
 * imported into an empty store beside the plain file, the order
 * alternating each round, on each engine (`before`: run on each store first).
 */
async function chainFieldsRounds(kind: string, plain: string, n: number, added: (r: Record<string, unknown>, i: number) => object, before?: (db: string) => void): Promise<void> {
  const chained = join(dir, `${kind}-chain.ndjson`);
  const out = createWriteStream(chained);
  let i = 0;
  for await (const line of createInterface({ input: createReadStream(plain) })) {
    const r = JSON.parse(line) as Record<string, unknown>;
    if (!out.write(`${JSON.stringify({ ...r, ...added(r, i++) })}\n`)) await once(out, "drain");
  }
  out.end();
  await once(out, "finish");
  const rates: Record<string, { plain: number[]; chain: number[] }> = {};
  let store = 0;
  for (let round = 1; round <= Number(opts.rounds); round++) {
    for (const engine of round % 2 === 1 ? engines : [...engines].reverse()) {
      const r = (rates[engine] ??= { plain: [], chain: [] });
      for (const variant of round % 2 === 1 ? (["plain", "chain"] as const) : (["chain", "plain"] as const)) {
        await withStore(engine, ++store, (db) => {
          before?.(db);
          r[variant].push(importRate(db, undefined, variant === "plain" ? plain : chained, kind));
          log(`round ${round} ${engine} ${kind} ${variant}: ${r[variant].at(-1)} rows/s`);
        });
      }
    }
  }
  log(`\n| engine | ${n} ${kind}, rows/s (median; rounds) | with chain and blockHash | with / without |`);
  log("|---|---|---|---|");
  for (const [engine, r] of Object.entries(rates)) {
    log(`| ${engine} | ${median(r.plain)} (${r.plain.join(", ")}) | ${median(r.chain)} (${r.chain.join(", ")}) | ${(median(r.chain) / median(r.plain)).toFixed(2)} |`);
  }
}
