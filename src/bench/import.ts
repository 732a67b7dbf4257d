// npm run bench:import: bulk import speed of sales NDJSON through the real
// CLI (file read, checks, writes, commit), on SQLite and on PostgreSQL in
// one run, engines alternating each round: the generated collection of N
// sales (bench:stats's and bench:engines's) into an empty store, then the
// same file again into that store (every row unchanged: the row-by-row
// merge, where an empty store takes the bulk path).
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Command } from "commander";
import pg from "pg";
import { runCliSync } from "../cli/run-sync.js";
import { log, median } from "./harness.js";
import { writeSales } from "./sales-file.js";

const opts = new Command("bench:import")
  .description("bulk import speed of sales NDJSON through the CLI, SQLite beside PostgreSQL")
  .option("--sales <n>", "sales in the file", "1000000")
  .option("--engines <list>", "sqlite,postgres", "sqlite,postgres")
  .option("--rounds <n>", "rounds, engines alternating", "3")
  .option("--pg <url>", "PostgreSQL server (a database of its own is created and dropped each round)", "postgres://postgres@127.0.0.1:5432/postgres")
  .parse()
  .opts<{ sales: string; engines: string; rounds: string; pg: string }>();

const ADDRESS = "0x00000000000000000000000000000000000e4c11";
const n = Number(opts.sales);
const engines = opts.engines.split(",");
const dir = mkdtempSync(join(tmpdir(), "marketdata-bench-import-"));
const file = join(dir, "sales.ndjson");

/** The CLI's own rows/s figure of one import. */
function importRate(db: string): number {
  const out = runCliSync(["import", "--db", db, "sales", file]).stderr;
  const rate = /\((\d+) rows\/s\)/.exec(out)?.[1];
  if (rate === undefined) throw new Error(`no rate in: ${out}`);
  return Number(rate);
}

/** A store of its own for one round: a new SQLite file, or a new PostgreSQL database. */
async function withStore(engine: string, round: number, fn: (db: string) => void): Promise<void> {
  if (engine === "sqlite") {
    const db = join(dir, `round-${round}.sqlite`);
    try {
      fn(db);
    } finally {
      for (const suffix of ["", "-wal", "-shm", "-keys", "-keys-wal", "-keys-shm"]) rmSync(db + suffix, { force: true });
    }
    return;
  }
  const name = `marketdata_bench_import_${process.pid}_${round}`;
  const admin = new pg.Client({ connectionString: opts.pg });
  await admin.connect();
  try {
    await admin.query(`CREATE DATABASE ${name}`);
    const url = new URL(opts.pg);
    url.pathname = `/${name}`;
    fn(url.toString());
  } finally {
    await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
    await admin.end();
  }
}

try {
  log(`generating ${n} sales...`);
  await writeSales(file, n, 11, ADDRESS);
  const rates: Record<string, { fresh: number[]; again: number[] }> = {};
  for (let round = 1; round <= Number(opts.rounds); round++) {
    for (const engine of round % 2 === 1 ? engines : [...engines].reverse()) {
      await withStore(engine, round, (db) => {
        const fresh = importRate(db);
        const again = importRate(db);
        (rates[engine] ??= { fresh: [], again: [] }).fresh.push(fresh);
        rates[engine]!.again.push(again);
        log(`round ${round} ${engine}: ${fresh} rows/s into an empty store, ${again} rows/s the same file again`);
      });
    }
  }
  log(`\n| engine | ${n} sales into an empty store, rows/s (median; rounds) | the same file again (all unchanged) |`);
  log("|---|---|---|");
  for (const [engine, r] of Object.entries(rates)) {
    log(`| ${engine} | ${median(r.fresh)} (${r.fresh.join(", ")}) | ${median(r.again)} (${r.again.join(", ")}) |`);
  }
} finally {
  rmSync(dir, { recursive: true, force: true });
}
