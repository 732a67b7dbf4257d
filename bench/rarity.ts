// npm run bench:rarity: derive time of OpenRarity-method rarity for the real
// BAYC collection (if ../shared/data is present) and for a generated
// 1,000,000-token collection: the computation alone, and with the store writes.
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { deriveCollection } from "../src/derive/derive.js";
import { computeRarity, type TokenTraits } from "../src/derive/rarity.js";
import { importLines } from "../src/ingest/importer.js";
import { SqliteRecordImport } from "../src/store/sqlite/importer.js";
import { Random, zipfCumulative } from "../src/demo/random.js";
import { openWritable } from "../src/store/sqlite/database.js";
import { DeriveStore } from "../src/store/sqlite/derive-store.js";

if (process.argv.includes("--help") || process.argv.includes("-h")) {
  console.log("usage: npm run bench:rarity");
  process.exit(0);
}

function time<T>(fn: () => T): [T, number] {
  const t = performance.now();
  const out = fn();
  return [out, performance.now() - t];
}

async function throughStore(label: string, tokens: TokenTraits[], address: string): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), "marketdata-bench-rarity-"));
  try {
    const db = openWritable(join(dir, "r.sqlite"));
    await importLines(
      new SqliteRecordImport(db),
      (async function* () {
        for (const t of tokens) yield JSON.stringify({ contractAddress: address, assetId: t.assetId, attributes: t.attributes });
      })(),
      { kind: "tokens", skipInvalid: false },
    );
    const started = performance.now();
    const result = await deriveCollection(new DeriveStore(db), address);
    const ms = performance.now() - started;
    console.log(`${label}: derive command path (read tokens, compute, write ${result.tokens} rarity rows) ${ms.toFixed(0)} ms`);
    db.close();
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

const bayc = fileURLToPath(new URL("../../shared/data/bayc-tokens.ndjson", import.meta.url));
if (existsSync(bayc)) {
  const tokens = readFileSync(bayc, "utf8").trimEnd().split("\n").map((l) => JSON.parse(l) as TokenTraits);
  computeRarity(tokens); // warm up the JIT, as a long-running process would be
  const runs = Array.from({ length: 5 }, () => time(() => computeRarity(tokens))[1]).sort((a, b) => a - b);
  console.log(`BAYC (10,000 tokens): rarity computation median of 5 runs ${runs[2]!.toFixed(0)} ms (reference Python OpenRarity: ~400 ms)`);
  await throughStore("BAYC", tokens, "0xbc4ca0eda7647a8ab7c2061c2e118a18a936f13d");
} else {
  console.log(`BAYC: skipped, ${bayc} not found`);
}

const rnd = new Random(9);
const types = Array.from({ length: 8 }, (_, i) => ({ type: `trait${i}`, values: 10 + i * 6, presence: i < 5 ? 1 : 0.6 }));
const cums = types.map((t) => zipfCumulative(t.values, 1.1));
const million: TokenTraits[] = [];
for (let id = 0; id < 1_000_000; id++) {
  const attributes = [];
  for (let k = 0; k < types.length; k++) {
    if (rnd.next() < types[k]!.presence) attributes.push({ trait_type: types[k]!.type, value: `v${rnd.weighted(cums[k]!)}` });
  }
  million.push({ assetId: String(id), attributes });
}
const [, ms] = time(() => computeRarity(million));
console.log(`generated 1,000,000 tokens: rarity computation ${ms.toFixed(0)} ms`);
await throughStore("generated 1,000,000 tokens", million, `0x${"5".repeat(40)}`);
