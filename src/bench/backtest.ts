// npm run backtest [-- --db PATH]: appraisal backtest on a store (by default
// a fresh demo store at default scale, seed 1, built in a temporary folder).
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { backtestCollection, emptyErrors, HOLDOUT, median } from "../derive/backtest.js";
import { traitVectors } from "../derive/rarity.js";
import { buildDemo } from "../demo/build.js";
import { openReadOnly, openWritable } from "../store/database.js";
import { DeriveStore } from "../store/derive-store.js";
import { sqliteWritable } from "../store/writable.js";

const { values } = parseArgs({
  options: { db: { type: "string" }, help: { type: "boolean", short: "h" } },
});
if (values.help) {
  console.log("usage: npm run backtest [-- --db PATH]\n\nAppraises each of the latest 20% of every collection's sales from earlier sales only,\nand prints the median absolute percentage error next to two naive baselines.");
  process.exit(0);
}

let dbPath = values.db;
let tmp: string | undefined;
if (dbPath === undefined) {
  tmp = mkdtempSync(join(tmpdir(), "marketdata-backtest-"));
  dbPath = join(tmp, "demo.sqlite");
  console.error("building the demo store (default scale, seed 1)...");
  const w = openWritable(dbPath);
  await buildDemo(sqliteWritable(w), 1, "default");
  w.close();
}

const db = openReadOnly(dbPath);
const store = new DeriveStore(db);
const all = emptyErrors();
const pct = (x: number) => `${(x * 100).toFixed(1)}%`;
console.log(`collection                                  sales  held out  model MdAPE  7-day median  last sale`);
for (const address of store.collectionsToDerive()) {
  const id = store.collectionId(address)!;
  const sales = store.sales(id);
  const traits = traitVectors(store.tokens(id));
  const e = backtestCollection(sales, (a) => traits.get(a));
  all.model.push(...e.model);
  all.weekMedian.push(...e.weekMedian);
  all.lastSale.push(...e.lastSale);
  all.withOwnSale += e.withOwnSale;
  console.log(
    `${address}  ${String(sales.length).padStart(6)}  ${String(e.model.length).padStart(8)}  ${pct(median(e.model)).padStart(11)}  ${pct(median(e.weekMedian)).padStart(12)}  ${pct(median(e.lastSale)).padStart(9)}`,
  );
}
console.log(
  `\nall collections: ${all.model.length} sales appraised (latest ${HOLDOUT * 100}% of each collection; ` +
    `${all.withOwnSale} had an earlier sale of the same asset)\n` +
    `  model (trait-adjusted comparables)   MdAPE ${pct(median(all.model))}\n` +
    `  collection median, prior 7 days      MdAPE ${pct(median(all.weekMedian))}\n` +
    `  asset's own last sale                MdAPE ${pct(median(all.lastSale))}`,
);
db.close();
if (tmp) rmSync(tmp, { recursive: true, force: true });
