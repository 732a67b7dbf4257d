// npm run bench:reorg: what a reorganisation costs (issue 52: the removal of
// the last 3 blocks acknowledged within 100 ms at p99 on a collection of 1M
// sales, on both engines, its cost independent of the collection's
// history). A store of N sales (bench:import's generated collection, one
// sale a block) and one of a hundredth of that, each served by
// `marketdata serve`; then, round after round, 3 new blocks of sales sent
// through the ingest API and taken back by `POST /v1/ingest/reorgs`, whose
// acknowledgement is timed. The sizes alternate per round. With --orders,
// each block also reprices that many listings made off-chain, which the
// reorganisation gives back their records before (docs/chains.md, "Orders
// taken back").
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Command } from "commander";
import pg from "pg";
import { runCliSync } from "../src/cli/run-sync.js";
import { log, percentiles, startCli, type Target } from "./harness.js";
import { writeSales } from "./sales-file.js";

const opts = new Command("bench:reorg")
  .description("acknowledgement latency of a reorganisation of the last 3 blocks, on a large and a small collection, SQLite beside PostgreSQL")
  .option("--sales <n>", "sales of the large collection (the small one: a hundredth)", "1000000")
  .option("--rounds <n>", "reorganisations timed per store", "200")
  .option("--engines <list>", "sqlite,postgres", "sqlite,postgres")
  .option("--pg <url>", "PostgreSQL server (a database of its own is created and dropped per store)", "postgres://postgres@127.0.0.1:5432/postgres")
  .option("--orders <n>", "also n on-chain listing records a block, each repricing an order made off-chain (the reorganisation gives each back its record before)", "0")
  .parse()
  .opts<{ sales: string; rounds: string; engines: string; pg: string; orders: string }>();
const orders = Number(opts.orders);

const ADDRESS = "0x00000000000000000000000000000000000e4c11";
const FIRST_BLOCK = 14_000_000;
const dir = mkdtempSync(join(tmpdir(), "marketdata-bench-reorg-"));
const created: string[] = [];

/** A store of `n` sales on `engine`, with an ingest key; its target (path or URL). */
async function storeOf(engine: string, n: number): Promise<{ db: string; key: string }> {
  const file = join(dir, `sales-${n}.ndjson`);
  await writeSales(file, n, 11, ADDRESS);
  let db = join(dir, `store-${n}.sqlite`);
  if (engine === "postgres") {
    const name = `marketdata_bench_reorg_${process.pid}_${n}`;
    const admin = new pg.Client({ connectionString: opts.pg });
    await admin.connect();
    await admin.query(`CREATE DATABASE ${name}`);
    await admin.end();
    created.push(name);
    const url = new URL(opts.pg);
    url.pathname = `/${name}`;
    db = url.toString();
  }
  log(`${engine}: importing ${n} sales...`);
  runCliSync(["import", "--db", db, "sales", file]);
  const key = runCliSync(["keys", "create", "--db", db, "--name", "bench", "--scope", "ingest"]).stdout.trim().split("\n").pop()!;
  return { db, key };
}

async function post(t: Target, key: string, kind: string, lines: object[]): Promise<Record<string, unknown>> {
  const r = await fetch(`${t.url}/v1/ingest/${kind}`, {
    method: "POST",
    headers: { "x-api-key": key, "content-type": "application/x-ndjson" },
    body: lines.map((l) => JSON.stringify(l)).join("\n"),
  });
  const body = (await r.json()) as Record<string, unknown>;
  if (r.status !== 200) throw new Error(`${kind}: ${r.status} ${JSON.stringify(body)}`);
  return body;
}

/** Listing `i` of the orders' pool: off-chain at first, then repriced on-chain at `block`. */
function listingOf(i: number, updated: number, block = 0): object {
  const createdAt = Math.floor(Date.now() / 1000) - 86_400;
  return {
    marketplaceId: String(900_000 + i), marketplace: "CRYPTOPUNKS", contractAddress: ADDRESS, assetId: String(i + 1), createdAt, lastUpdatedAt: Math.max(createdAt, updated),
    price: String(block === 0 ? 5000 : 4000 + i), currency: "ETH", status: "CREATED", block, ...(block === 0 ? {} : { blockHash: `0x${block.toString(16).padStart(64, "0")}` }),
  };
}

/** Three new blocks of 20 sales each (and --orders listings) above the collection's tip, taken back again: the reorganisation's acknowledgement, ms. */
async function round(t: Target, key: string, tip: number, r: number): Promise<number> {
  const now = Math.floor(Date.now() / 1000) - 60;
  const sales = [];
  for (let b = 1; b <= 3; b++) {
    for (let i = 0; i < 20; i++) {
      sales.push({
        hash: `0x${(r * 1000 + b * 100 + i).toString(16).padStart(64, "f")}`, from: `0x${"1".repeat(40)}`, to: `0x${"2".repeat(40)}`,
        contractAddress: ADDRESS, assetId: String(i + 1), timestamp: now, block: tip + b, price: "1000", amountReceived: "975", currency: "ETH", marketplace: "OPENSEA",
      });
    }
  }
  await post(t, key, "sales", sales);
  if (orders > 0) {
    const repriced = [];
    for (let b = 1; b <= 3; b++) for (let i = 0; i < orders; i++) repriced.push(listingOf((b - 1) * orders + i, now, tip + b));
    await post(t, key, "listings", repriced);
  }
  const started = performance.now();
  const answer = await post(t, key, "reorgs", [{ fromBlock: tip + 1 }]);
  const ms = performance.now() - started;
  if (answer.accepted !== 1) throw new Error(`the reorganisation took nothing back: ${JSON.stringify(answer)}`);
  return ms;
}

try {
  const large = Number(opts.sales);
  const sizes = [Math.max(1000, Math.floor(large / 100)), large];
  const rows: string[] = [];
  for (const engine of opts.engines.split(",")) {
    const stores = [];
    for (const n of sizes) stores.push({ n, ...(await storeOf(engine, n)) });
    const targets = await Promise.all(stores.map((s) => startCli(s.db, 1, 0, ["--ingest-rate-limit", "0", "--no-derive-refresh"])));
    try {
      // The orders' pool, made off-chain.
      if (orders > 0) for (const [i, t] of targets.entries()) await post(t, stores[i]!.key, "listings", Array.from({ length: 3 * orders }, (_, o) => listingOf(o, 0)));
      const times: number[][] = sizes.map(() => []);
      for (let r = 0; r < Number(opts.rounds); r++) {
        // The sizes alternate: the machine's drift reaches both alike.
        for (const i of r % 2 === 0 ? [0, 1] : [1, 0]) times[i]!.push(await round(targets[i]!, stores[i]!.key, FIRST_BLOCK + sizes[i]! + 10 * r, r));
      }
      const [small, big] = times.map((t) => percentiles(t.slice(10)));
      rows.push(`| ${engine} | ${sizes[0]} sales: p50 ${small!.p50.toFixed(1)}, p99 ${small!.p99.toFixed(1)} | ${sizes[1]} sales: p50 ${big!.p50.toFixed(1)}, p99 ${big!.p99.toFixed(1)} | ${(big!.p99 / small!.p99).toFixed(2)} |`);
      log(rows.at(-1)!);
    } finally {
      await Promise.all(targets.map((t) => t.stop()));
    }
  }
  log(`\n| engine | reorganisation of the last 3 blocks (60 sales${orders > 0 ? `, ${3 * orders} listings' records` : ""}), ms, small collection | large collection | p99 large / small |\n|---|---|---|---|\n${rows.join("\n")}`);
} finally {
  if (created.length > 0) {
    const admin = new pg.Client({ connectionString: opts.pg });
    await admin.connect();
    for (const name of created) await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
    await admin.end();
  }
  rmSync(dir, { recursive: true, force: true });
}
