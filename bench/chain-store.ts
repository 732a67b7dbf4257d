import { createWriteStream, mkdtempSync, rmSync } from "node:fs";
import { once } from "node:events";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Command } from "commander";
import { runCliSync } from "../src/cli/run-sync.js";
import { diskUsage } from "../src/cli/stats.js";
import { Random } from "../src/demo/random.js";
import { log } from "./harness.js";
import { MARKETPLACES } from "./sales-file.js";

// npm run bench:chain-store — a store the size of a chain's market, built
// by `import` as an operator would load one and kept out of the repo
// (issue 50): --collections collections of up to 10,000 tokens, whose
// sales, transfers, listings and offers fall on them by a skewed law (a few
// collections hold most of the trade, as on a chain), two years of times,
// 20,000 wallets. Gives each kind's import time and rate, the store's size
// on disk by table and per record, and leaves the store at --db for
// `npm run bench:serve -- --stores <path> --parts cold` (every read
// endpoint, cold) and `stats disk`.

const opts = new Command("bench:chain-store")
  .description("build a chain-sized store by import and give its import time and disk size")
  .option("--db <path-or-url>", "the store to build (must not exist yet, or be empty)", "data/bench-chain.sqlite")
  .option("--collections <n>", "collections", "200000")
  .option("--sales <n>", "sales", "20000000")
  .option("--transfers <n>", "transfers", "40000000")
  .option("--listings <n>", "listings", "2000000")
  .option("--offers <n>", "offers", "2000000")
  .parse()
  .opts<{ db: string; collections: string; sales: string; transfers: string; listings: string; offers: string }>();

const COLLECTIONS = Number(opts.collections);
const END = 1_793_491_200;
const SPAN = 730 * 86_400;
const rnd = new Random(2026);
const wallets = Array.from({ length: 20_000 }, () => `0x${rnd.hex(40)}`);
const address = (c: number) => `0x${(0xc4a1_0000_0000 + c).toString(16).padStart(40, "0")}`;
/** A collection by a skewed law: index 0 the busiest, the tail long. */
const collection = () => Math.floor(COLLECTIONS * rnd.next() ** 3);
/** Tokens of collection c: the busy ones 10,000, the tail fewer. */
const tokensOf = (c: number) => Math.max(10, Math.min(10_000, Math.floor(10_000_000 / (c + 1))));
const asset = (c: number) => String(rnd.int(1, tokensOf(c)));
const price = () => (BigInt(Math.round((0.001 + rnd.next() ** 4 * 50) * 1e6)) * 10n ** 12n).toString();

/** n records from `make(i)` (times in order over two years) as an NDJSON file. */
async function writeKind(path: string, n: number, make: (i: number, time: number) => object): Promise<void> {
  const out = createWriteStream(path);
  for (let i = 0; i < n; i++) {
    const line = `${JSON.stringify(make(i, END - SPAN + Math.floor((i / n) * SPAN)))}\n`;
    if (!out.write(line)) await once(out, "drain");
  }
  out.end();
  await once(out, "finish");
}

const KINDS: { kind: string; n: number; make: (i: number, time: number) => object }[] = [
  {
    kind: "collections",
    n: COLLECTIONS,
    make: (c) => ({ contractAddress: address(c), name: `Collection ${c}` }),
  },
  {
    kind: "sales",
    n: Number(opts.sales),
    make: (i, timestamp) => {
      const c = collection();
      const p = price();
      return { hash: `0x${rnd.hex(64)}`, from: rnd.pick(wallets), to: rnd.pick(wallets), contractAddress: address(c), assetId: asset(c), timestamp,
        block: 16_000_000 + Math.floor(i / 20), price: p, amountReceived: p, currency: "ETH", marketplace: rnd.pick(MARKETPLACES) };
    },
  },
  {
    kind: "transfers",
    n: Number(opts.transfers),
    make: (i, timestamp) => {
      const c = collection();
      return { hash: `0x${rnd.hex(64)}`, logIndex: rnd.int(0, 200), from: rnd.pick(wallets), to: rnd.pick(wallets), contractAddress: address(c),
        assetId: asset(c), timestamp, block: 16_000_000 + Math.floor(i / 40) };
    },
  },
  {
    kind: "listings",
    n: Number(opts.listings),
    make: (i, createdAt) => {
      const c = collection();
      const status = rnd.pick(["CREATED", "CREATED", "CANCELLED", "FULFILLED", "EXPIRED"]);
      return { marketplaceId: String(i), marketplace: rnd.pick(MARKETPLACES), contractAddress: address(c), assetId: asset(c), createdAt,
        lastUpdatedAt: status === "CREATED" ? createdAt : createdAt + rnd.int(60, 86_400), price: price(), currency: "ETH", status };
    },
  },
  {
    kind: "offers",
    n: Number(opts.offers),
    make: (i, createdAt) => {
      const c = collection();
      const token = rnd.next() < 0.5;
      return { marketplaceId: String(i), marketplace: rnd.pick(MARKETPLACES), contractAddress: address(c), assetId: token ? asset(c) : "", traitType: "", traitValue: "",
        createdAt, lastUpdatedAt: createdAt, expiresAt: 0, price: price(), currency: "ETH", status: rnd.pick(["CREATED", "CREATED", "CANCELLED", "FULFILLED"]), maker: rnd.pick(wallets) };
    },
  },
];

const dir = mkdtempSync(join(tmpdir(), "marketdata-chain-store-"));
try {
  runCliSync(["migrate", "--db", opts.db]);
  log(`\n## chain-sized store at ${opts.db}: ${COLLECTIONS.toLocaleString("en-US")} collections\n`);
  log("| kind | records | generated s | import s | records/s |\n|---|---|---|---|---|");
  let records = 0;
  let importSeconds = 0;
  for (const { kind, n, make } of KINDS) {
    if (n === 0) continue;
    const file = join(dir, `${kind}.ndjson`);
    let t = performance.now();
    await writeKind(file, n, make);
    const generated = (performance.now() - t) / 1000;
    t = performance.now();
    runCliSync(["import", kind, file, "--db", opts.db]);
    const seconds = (performance.now() - t) / 1000;
    rmSync(file);
    records += kind === "collections" ? 0 : n;
    importSeconds += seconds;
    log(`| ${kind} | ${n.toLocaleString("en-US")} | ${generated.toFixed(0)} | ${seconds.toFixed(0)} | ${Math.round(n / seconds).toLocaleString("en-US")} |`);
  }
  const usage = await diskUsage(opts.db);
  log(`\n${records.toLocaleString("en-US")} market records imported in ${importSeconds.toFixed(0)} s; the store: ${(usage.total / 1e9).toFixed(2)} GB, ${Math.round(usage.total / records)} bytes per record`);
  log(`largest: ${usage.parts.slice(0, 10).map((p) => `${p.name} ${(p.bytes / 1e6).toFixed(0)} MB`).join(", ")}`);
} finally {
  rmSync(dir, { recursive: true, force: true });
}
