// npm run bench:derive [-- --parts collection,large]: how long derive takes
// (read tokens and sales, rarity, the appraisal model's pass over every sale
// with its calibration, write): for a generated collection of 10,000 tokens
// and 100,000 sales (target < 2 s), and for the whole large demo store
// (target < 60 s). Three rounds each, medians.
import { createReadStream, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { Readable } from "node:stream";
import { parseArgs } from "node:util";
import { deriveAll, deriveCollection } from "../src/derive/derive.js";
import { buildDemo } from "../src/demo/build.js";
import { DOCS_DEMO_END } from "../src/demo/generate.js";
import { importLines } from "../src/ingest/importer.js";
import { SqliteRecordImport } from "../src/store/sqlite/importer.js";
import { openWritable } from "../src/store/sqlite/database.js";
import { DeriveStore } from "../src/store/sqlite/derive-store.js";
import { sqliteWritable } from "../src/store/sqlite/writable.js";
import { median } from "./harness.js";
import { tokenLines, writeSales } from "./sales-file.js";

const { values } = parseArgs({ options: { parts: { type: "string", default: "collection,large" }, help: { type: "boolean", short: "h" } } });
if (values.help) {
  console.log("usage: npm run bench:derive [-- --parts collection,large]\n\nderive time for a 10,000-token, 100,000-sale collection and for the large demo store");
  process.exit(0);
}
const parts = new Set(values.parts!.split(","));
const ADDRESS = "0x00000000000000000000000000000000000de71e";
const ROUNDS = 3;

const dir = mkdtempSync(join(tmpdir(), "marketdata-bench-derive-"));
try {
  if (parts.has("collection")) {
    const db = openWritable(join(dir, "collection.sqlite"));
    const sales = join(dir, "sales.ndjson");
    await writeSales(sales, 100_000, 3, ADDRESS);
    await importLines(new SqliteRecordImport(db), Readable.from(tokenLines(9_999, ADDRESS)), { kind: "tokens", skipInvalid: false });
    await importLines(new SqliteRecordImport(db), createInterface({ input: createReadStream(sales), crlfDelay: Infinity }), { kind: "sales", skipInvalid: false });
    const rounds: number[] = [];
    let appraisal = 0;
    for (let r = 0; r < ROUNDS; r++) {
      const started = performance.now();
      const result = await deriveCollection(new DeriveStore(db), ADDRESS);
      rounds.push(performance.now() - started);
      appraisal = result.appraisalMs;
    }
    console.log(`\n10,000 tokens, 100,000 sales: derive ${median(rounds).toFixed(0)} ms median (rounds ${rounds.map((x) => x.toFixed(0)).join(", ")}); appraisals alone ${appraisal.toFixed(0)} ms (last round)`);
    db.close();
  }
  if (parts.has("large")) {
    const db = openWritable(join(dir, "large.sqlite"));
    console.error("building the large demo store...");
    await buildDemo(sqliteWritable(db), 1, "large", undefined, DOCS_DEMO_END);
    const rounds: number[] = [];
    let sales = 0;
    for (let r = 0; r < ROUNDS; r++) {
      const started = performance.now();
      const results = await deriveAll(new DeriveStore(db));
      rounds.push(performance.now() - started);
      sales = results.reduce((s, x) => s + x.sales, 0);
    }
    console.log(`large demo store (${sales} sales): derive ${(median(rounds) / 1000).toFixed(1)} s median (rounds ${rounds.map((x) => (x / 1000).toFixed(1)).join(", ")} s)`);
    db.close();
  }
} finally {
  rmSync(dir, { recursive: true, force: true });
}
