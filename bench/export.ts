// npm run bench:export: `marketdata export sales` of the generated 1M-sale
// collection (bench:import's file) against `marketdata import` of the same
// file, both through the CLI, on SQLite and PostgreSQL, engines and the two
// alternating each round: each round imports the file into an empty store
// (import's rate: the CLI's own rows/s), then exports the collection to a
// file (export's rate: its records over the command's wall time), and a
// collection of a tenth the size beside it, whose peak memory the big
// one's is held against (memory flat: the ratio near 1). Memory is the
// process's anonymous resident set (sampled): SQLite maps the store's file
// for reads, and the pages it touched count in RSS but are page cache. The
// exported file is checked to hold every sale.
import { spawn } from "node:child_process";
import { once } from "node:events";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Command } from "commander";
import { BIN } from "../src/cli/run-sync.js";
import { cliImportRate, withRoundStore } from "./round-store.js";
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
const small = Math.max(1, Math.floor(n / 10));
const engines = opts.engines.split(",");
const dir = mkdtempSync(join(tmpdir(), "marketdata-bench-export-"));

/** The process's anonymous resident memory (heap, stacks), kB: not the store's file pages SQLite maps (reclaimable page cache). */
function anonKb(pid: number): number {
  try {
    return Number(/RssAnon:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, "utf8"))?.[1] ?? 0);
  } catch {
    return 0; // Exited between two samples.
  }
}

/** An export's wall seconds and peak anonymous memory (MB, sampled every 50 ms), and the lines it wrote. */
async function exportRun(db: string, contract: string): Promise<{ seconds: number; mb: number; lines: number }> {
  const out = join(dir, "export.ndjson");
  const started = performance.now();
  const child = spawn(process.execPath, [BIN, "export", "sales", "--db", db, "--contract", contract, "--out", out], { stdio: ["ignore", "ignore", "pipe"] });
  let stderr = "";
  child.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
  let peak = 0;
  const sampler = setInterval(() => (peak = Math.max(peak, anonKb(child.pid!))), 50);
  const [code] = (await once(child, "exit")) as [number | null];
  clearInterval(sampler);
  const seconds = (performance.now() - started) / 1000;
  if (code !== 0) throw new Error(`export failed: ${stderr}`);
  const lines = readFileSync(out, "utf8").split("\n").length - 1;
  rmSync(out);
  return { seconds, mb: Math.round(peak / 1024), lines };
}

const withStore = (engine: string, round: number, fn: (db: string) => Promise<void>) => withRoundStore(engine, { dir, pgUrl: opts.pg, name: "export" }, round, fn);

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
      await withStore(engine, round, async (db) => {
        cliImportRate(db, smallFile);
        const imported = cliImportRate(db, bigFile);
        const big = await exportRun(db, BIG);
        const little = await exportRun(db, SMALL);
        if (big.lines !== n || little.lines !== small) throw new Error(`exported ${big.lines} and ${little.lines} sales, not ${n} and ${small}`);
        const exported = Math.round(n / big.seconds);
        e.imported.push(imported);
        e.exported.push(exported);
        e.ratio.push(exported / imported);
        e.bigMb.push(big.mb);
        e.smallMb.push(little.mb);
        log(`round ${round} ${engine}: import ${imported} rows/s, export ${exported} rows/s (${(exported / imported).toFixed(2)}); peak anonymous memory ${big.mb} MB (${n} sales), ${little.mb} MB (${small})`);
      });
    }
  }
  log(`\n| engine | import, rows/s (median; rounds) | export, rows/s | export / import | peak anonymous MB, ${n} sales / ${small} |`);
  log("|---|---|---|---|---|");
  for (const [engine, e] of Object.entries(r)) {
    log(`| ${engine} | ${median(e.imported)} (${e.imported.join(", ")}) | ${median(e.exported)} (${e.exported.join(", ")}) | ${median(e.ratio).toFixed(2)} | ${median(e.bigMb)} / ${median(e.smallMb)} |`);
  }
} finally {
  rmSync(dir, { recursive: true, force: true });
}
