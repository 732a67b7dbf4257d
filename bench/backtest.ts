// npm run backtest [-- --db PATH] [--no-punks]: the appraisal backtest, on a
// store (by default a fresh demo store at default scale, seed 1, built in a
// temporary folder) and on the real CryptoPunks data when ../shared/data has
// it, each built through the service's own import and derive code.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { HOLDOUT, type Prediction } from "../src/derive/backtest.js";
import { byTier, calibration, errorFigures, PREDICTORS, type Predictor, resolution, shareNoise, TIERS } from "../src/derive/backtest-report.js";
import { CONFIDENCE_INPUTS } from "../src/derive/calibration.js";
import { backtestStore, buildPunksStore, havePunks, PUNKS_DIR } from "../src/derive/backtest-store.js";
import { buildDemo } from "../src/demo/build.js";
import { DOCS_DEMO_END } from "../src/demo/generate.js";
import { openWritable } from "../src/store/sqlite/database.js";
import { sqliteWritable } from "../src/store/sqlite/writable.js";
import { openWritableStore } from "../src/store/open.js";

const { values } = parseArgs({
  options: { db: { type: "string" }, "no-punks": { type: "boolean" }, "no-demo": { type: "boolean" }, help: { type: "boolean", short: "h" } },
});
if (values.help) {
  console.log(`usage: npm run backtest [-- --db PATH] [--no-demo] [--no-punks]

Appraises each of the latest ${HOLDOUT * 100}% of every collection's sales from strictly earlier
data, next to two naive baselines, and prints the error by price tier, the
calibration of confidence, and its resolution (the share within ±20% by
quintile of each input): for the store at --db (default: a fresh demo store)
and for the real CryptoPunks data in ${PUNKS_DIR} when present.`);
  process.exit(0);
}

const NAMES: Record<Predictor, string> = {
  model: "this model",
  weekMedian: "collection median, prior 7 days",
  lastSale: "the asset's own last sale",
};
const pct = (x: number) => `${(x * 100).toFixed(1)}%`;

function report(title: string, collections: { address: string; sales: number; predictions: Prediction[] }[]): void {
  const all = collections.flatMap((c) => c.predictions);
  const sales = collections.reduce((s, c) => s + c.sales, 0);
  console.log(`\n## ${title}: ${all.length} held-out sales of ${sales} (${collections.length} collection${collections.length === 1 ? "" : "s"})\n`);
  const tiers = byTier(all);
  const parts: [string, Prediction[]][] = [["all", all], ...TIERS.map((t): [string, Prediction[]] => [t, tiers[t]])];
  console.log("| predictor | tier | sales | MdAPE | within ±10% | within ±20% |");
  console.log("|---|---|---|---|---|---|");
  for (const p of PREDICTORS) {
    for (const [name, part] of parts) {
      const f = errorFigures(part, p);
      console.log(`| ${NAMES[p]} | ${name} | ${part.length} | ${pct(f.mdape)} | ${pct(f.within10)} | ${pct(f.within20)} |`);
    }
  }
  const best = Math.min(errorFigures(all, "weekMedian").mdape, errorFigures(all, "lastSale").mdape);
  console.log(`\nmodel MdAPE / better baseline: ${(errorFigures(all, "model").mdape / best).toFixed(2)}`);
  const c = calibration(all);
  console.log("\n| confidence decile | sales | mean confidence | observed within ±20% | difference |");
  console.log("|---|---|---|---|---|");
  c.deciles.forEach((d, i) =>
    console.log(`| ${i + 1} | ${d.count} | ${d.meanConfidence.toFixed(3)} | ${d.observed.toFixed(3)} | ${(d.observed - d.meanConfidence).toFixed(3)} |`),
  );
  console.log(
    `\nBrier score: model ${c.brier.toFixed(4)}; constant confidence (the training period's share) ${c.constantBrier.toFixed(4)}; ` +
      `best constant in hindsight (${c.observed.toFixed(3)}) ${c.hindsightBrier.toFixed(4)}`,
  );
  // Resolution: can any input tell hits from misses? A confidence beats a
  // constant only by the spread of these shares beyond sampling noise.
  const inputs: [string, (p: Prediction) => number][] = [
    ...CONFIDENCE_INPUTS.map(({ name, of }): [string, (p: Prediction) => number] => [name, (p) => of(p.estimate)]),
    ["confidence itself", (p) => p.confidence],
  ];
  console.log(`\n| share within ±20% by quintile of | Q1 | Q2 | Q3 | Q4 | Q5 | max − min |`);
  console.log("|---|---|---|---|---|---|---|");
  for (const [name, value] of inputs) {
    const shares = resolution(all, value).map((g) => g.observed);
    console.log(`| ${name} | ${shares.map((x) => x.toFixed(3)).join(" | ")} | ${(Math.max(...shares) - Math.min(...shares)).toFixed(3)} |`);
  }
  console.log(`\n(two standard errors of one quintile's share from sampling alone: ±${shareNoise(c.observed, all.length / 5).toFixed(3)})`);
}

const tmp = mkdtempSync(join(tmpdir(), "marketdata-backtest-"));
try {
  if (!values["no-demo"]) {
    let dbPath = values.db;
    if (dbPath === undefined) {
      dbPath = join(tmp, "demo.sqlite");
      console.error("building the demo store (default scale, seed 1)...");
      const w = openWritable(dbPath);
      await buildDemo(sqliteWritable(w), 1, "default", undefined, DOCS_DEMO_END);
      w.close();
    }
    const store = await openWritableStore(dbPath);
    report(values.db === undefined ? "demo store (default scale, seed 1)" : dbPath, await backtestStore(store.derive));
    await store.close();
  }
  if (!values["no-punks"]) {
    if (!havePunks()) console.log(`\n(no CryptoPunks data at ${PUNKS_DIR}: skipped)`);
    else {
      console.error("importing and deriving the CryptoPunks data...");
      const { store, rejected } = await buildPunksStore(join(tmp, "punks.sqlite"));
      report(`CryptoPunks, real sales 2017-06 to 2021-01 (${rejected} records without a price rejected)`, await backtestStore(store.derive));
      await store.close();
    }
  }
} finally {
  rmSync(tmp, { recursive: true, force: true });
}
