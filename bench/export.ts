// npm run bench:export: `marketdata export sales` of the generated 1M-sale
// collection (bench:import's file) against `marketdata import` of the same
// file, both through the CLI, on SQLite and PostgreSQL, engines and the two
// alternating each round: each round imports the file into an empty store
// (import's rate: the CLI's own rows/s), then exports the collection to a
// file (export's rate: its records over the command's wall time), and a
// collection of a hundredth the size beside it, whose peak memory the big
// one's is held against (memory flat: the ratio near 1). The exported file
// is checked to hold every sale.
import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Command } from "commander";
import pg from "pg";
import { BIN, runCliSync } from "../src/cli/run-sync.js";
import { log, median } from "./harness.js";
import { writeSales } from "./sales-file.js";

const opts = new Command("bench:export")
  .description("export of a 1M-sale collection against import of the same file, SQLite and PostgreSQL")
  .option("--sales <n>", "sales of the big collection", "1000000")
  .option("--engines <list>", "sqlite,postgres", "sqlite,postgres")
  .option("--rounds <n>", "rounds, engines alternating", "3")
  .option("--pg <url>", "PostgreSQL server (a database of its own is created and dropped each round)", "postgres://postgres@127.0.0.1:5432/postgres")
  .parse()
  .opts<{ sales: string; engines: string; rounds: string; pg: string }>();

const BIG = "0x00000000000000000000000000000000000e4c11";
const SMALL = "0x00000000000000000000000000000000000e4c12";
const n = Number(opts.sales);
const small = Math.max(1, Math.floor(n / 100));
const engines = opts.engines.split(",");
const dir = mkdtempSync(join(tmpdir(), "marketdata-bench-export-"));

/** The CLI's own rows/s figure of an import. */
function importRate(db: string, file: string): number {
  const out = runCliSync(["import", "--db", db, "sales", file]).stderr;
  const rate = /\((\d+) rows\/s\)/.exec(out)?.[1];
  if (rate === undefined) throw new Error(`no rate in: ${out}`);
  return Number(rate);
}

/** An export's wall seconds and peak resident memory (MB), by /usr/bin/time, and the lines it wrote. */
function exportRun(db: string, contract: string): { seconds: number; mb: number; lines: number } {
  const out = join(dir, "export.ndjson");
  const r = spawnSync("/usr/bin/time", ["-f", "%e %M", process.execPath, BIN, "export", "sales", "--db", db, "--contract", contract, "--out", out], { encoding: "utf8" });
  if (r.status !== 0) throw new Error(`export failed: ${r.stderr}`);
  const [seconds, kb] = r.stderr.trim().split("\n").at(-1)!.split(" ").map(Number);
  const lines = readFileSync(out, "utf8").split("\n").length - 1;
  rmSync(out);
  return { seconds: seconds!, mb: Math.round(kb! / 1024), lines };
}

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
  const name = `marketdata_bench_export_${process.pid}_${round}`;
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
  log(`generating ${n} and ${small} sales...`);
  const bigFile = join(dir, "big.ndjson");
  const smallFile = join(dir, "small.ndjson");
  await writeSales(bigFile, n, 11, BIG);
  await writeSales(smallFile, small, 12, SMALL);
  const r: Record<string, { imported: number[]; exported: number[]; ratio: number[]; bigMb: number[]; smallMb: number[] }> = {};
  for (let round = 1; round <= Number(opts.rounds); round++) {
    for (const engine of round % 2 === 1 ? engines : [...engines].reverse()) {
      const e = (r[engine] ??= { imported: [], exported: [], ratio: [], bigMb: [], smallMb: [] });
      await withStore(engine, round, (db) => {
        importRate(db, smallFile);
        const imported = importRate(db, bigFile);
        const big = exportRun(db, BIG);
        const little = exportRun(db, SMALL);
        if (big.lines !== n || little.lines !== small) throw new Error(`exported ${big.lines} and ${little.lines} sales, not ${n} and ${small}`);
        const exported = Math.round(n / big.seconds);
        e.imported.push(imported);
        e.exported.push(exported);
        e.ratio.push(exported / imported);
        e.bigMb.push(big.mb);
        e.smallMb.push(little.mb);
        log(`round ${round} ${engine}: import ${imported} rows/s, export ${exported} rows/s (${(exported / imported).toFixed(2)}); peak memory ${big.mb} MB (${n} sales), ${little.mb} MB (${small})`);
      });
    }
  }
  log(`\n| engine | import, rows/s (median; rounds) | export, rows/s | export / import | peak MB, ${n} sales / ${small} |`);
  log("|---|---|---|---|---|");
  for (const [engine, e] of Object.entries(r)) {
    log(`| ${engine} | ${median(e.imported)} (${e.imported.join(", ")}) | ${median(e.exported)} (${e.exported.join(", ")}) | ${median(e.ratio).toFixed(2)} | ${median(e.bigMb)} / ${median(e.smallMb)} |`);
  }
} finally {
  rmSync(dir, { recursive: true, force: true });
}
