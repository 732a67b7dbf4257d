// npm run bench:replay [-- --holdout 0.2]: the real CryptoPunks sales
// (../shared/data/cryptopunks) fed in time order through the ingest API of
// `marketdata serve` with its background derive on, and the appraisal of
// each asset read through the API just before its sale: the live pipeline
// judged as the offline backtest (npm run backtest) judges the model. The
// first sales go in as history, in batches; each of the latest `--holdout`
// share is then preceded by a read of its asset's appraisal, once the
// server has derived from every sale before it (serve's "derived" log lines
// say when). Reports the median absolute percentage error of the served
// appraisal against the collection's 7-day median and the asset's last
// sale, and confidence by quintile against its hit rate (sales within
// ±20%; target: every quintile within 0.05, issue 53).
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Command } from "commander";
import { runCliSync } from "../src/cli/run-sync.js";
import { WeekMedian } from "../src/derive/backtest.js";
import { calibration, errorFigures, PREDICTORS } from "../src/derive/backtest-report.js";
import { havePunks, PUNKS_DIR } from "../src/derive/backtest-store.js";
import { derivedLines, log, startCli, type Target } from "./harness.js";

const opts = new Command("bench:replay")
  .description("the real CryptoPunks sales fed in time order through the ingest API, each asset's served appraisal read just before its sale")
  .option("--holdout <share>", "the latest share of the sales appraised before they are fed", "0.2")
  .parse()
  .opts<{ holdout: string }>();

if (!havePunks()) {
  log(`bench:replay: skipped: the CryptoPunks data is not in ${PUNKS_DIR}`);
  process.exit(0);
}

interface SaleLine {
  contractAddress: string;
  assetId: string;
  timestamp: number;
  price: string;
}

const PUNKS = join(PUNKS_DIR, "sales-2017-06-to-2021-01.ndjson");
const lines = readFileSync(PUNKS, "utf8").split("\n").filter((l) => l.trim() !== "");
// In time order, as a feed sends them; the nine priced "-" are refused by the API (skipInvalid).
const sales = lines.map((line) => ({ line, sale: JSON.parse(line) as SaleLine })).sort((a, b) => a.sale.timestamp - b.sale.timestamp);
const valid = sales.filter((s) => /^\d+$/.test(s.sale.price));
const ADDRESS = valid[0]!.sale.contractAddress;
const split = Math.floor(valid.length * (1 - Number(opts.holdout)));

const dir = mkdtempSync(join(tmpdir(), "marketdata-bench-replay-"));
let server: Target | undefined;
try {
  const db = join(dir, "punks.sqlite");
  runCliSync(["migrate", "--db", db]);
  for (const file of ["collections.ndjson", "tokens.ndjson"]) runCliSync(["import", file.split(".")[0]!, join(PUNKS_DIR, file), "--db", db], 600_000);
  const key = runCliSync(["keys", "create", "--db", db, "--name", "bench:replay", "--scope", "ingest"]).stdout.trim().split("\n").pop()!;
  server = await startCli(db, 1, 64, ["--rate-limit", "0", "--ingest-rate-limit", "0", "--anonymous-rate-limit", "0"]);
  const target = server;

  let commits = 0;
  let logOffset = 0;
  let derivedCommits = 0;
  const post = async (batch: string[]) => {
    const r = await fetch(`${target.url}/v1/ingest/sales?skipInvalid=true`, {
      method: "POST",
      headers: { "x-api-key": key, "content-type": "application/x-ndjson" },
      body: `${batch.join("\n")}\n`,
    });
    if (r.status !== 200) throw new Error(`ingest answered ${r.status}: ${await r.text()}`);
    if (((await r.json()) as { accepted: number }).accepted > 0) commits++;
  };
  /** Waits until serve has derived from every commit so far. */
  const caughtUp = async () => {
    for (const deadline = performance.now() + 120_000; derivedCommits < commits; await new Promise((r) => setTimeout(r, 10))) {
      const out = target.output();
      const fresh = out.slice(logOffset, out.lastIndexOf("\n") + 1);
      logOffset += fresh.length;
      for (const l of derivedLines(fresh)) derivedCommits += l.waitedMs.length;
      if (performance.now() > deadline) throw new Error("the background derive did not catch up within 120 s");
    }
  };
  const appraisals = async (assets: string[]) => {
    const r = await fetch(`${target.url}/v1/asset/appraisals?contractAddress=${ADDRESS}&assetId=${assets.join(",")}`, { headers: { "x-api-key": key } });
    const body = (await r.json()) as { data: { assetId: string; fairMarketValue: string; confidence: string }[] };
    return new Map(body.data.map((a) => [a.assetId, a]));
  };

  // The baselines see the raw prices of every sale fed so far.
  const week = new WeekMedian();
  const lastSale = new Map<string, number>();
  const observe = (s: SaleLine) => {
    week.observe(s.timestamp, Number(s.price));
    lastSale.set(s.assetId, Number(s.price));
  };

  const started = performance.now();
  for (let i = 0; i < split; i += 500) {
    await post(valid.slice(i, Math.min(i + 500, split)).map((s) => s.line));
    for (const s of valid.slice(i, Math.min(i + 500, split))) observe(s.sale);
  }
  log(`history: ${split} sales through the ingest API in ${((performance.now() - started) / 1000).toFixed(1)} s`);

  const predictions: { actual: number; model: number; weekMedian: number; lastSale: number; confidence: number; constantConfidence: number }[] = [];
  let unappraised = 0;
  let waitedMs = 0;
  for (let i = split; i < valid.length; ) {
    // A second's sales (sweeps) are appraised together, before any of them is fed.
    let j = i;
    while (j < valid.length && valid[j]!.sale.timestamp === valid[i]!.sale.timestamp) j++;
    const group = valid.slice(i, j);
    const t = performance.now();
    await caughtUp();
    waitedMs += performance.now() - t;
    const assets = [...new Set(group.map((s) => s.sale.assetId))];
    const served = new Map<string, { fairMarketValue: string; confidence: string }>();
    for (let k = 0; k < assets.length; k += 20) for (const [a, v] of await appraisals(assets.slice(k, k + 20))) served.set(a, v);
    for (const { sale } of group) {
      const a = served.get(sale.assetId);
      const w = week.at(sale.timestamp);
      const last = lastSale.get(sale.assetId);
      if (a === undefined || w === undefined) {
        unappraised++;
        continue;
      }
      predictions.push({
        actual: Number(sale.price),
        model: Number(a.fairMarketValue),
        weekMedian: w,
        // An asset that never sold before: the week's median stands in, as in the offline backtest.
        lastSale: last ?? w,
        confidence: Number(a.confidence),
        constantConfidence: Number.NaN,
      });
    }
    await post(group.map((s) => s.line));
    for (const { sale } of group) observe(sale);
    i = j;
  }
  await caughtUp();

  log(`\nCryptoPunks replay through the ingest API: ${valid.length - split} held-out sales appraised by the server just before each was fed (${predictions.length} with an appraisal and a 7-day median, ${unappraised} without); waited ${(waitedMs / 1000).toFixed(0)} s in all for the background derive\n`);
  log("| predictor | MdAPE | within ±20% |");
  log("|---|---|---|");
  const names = { model: "served appraisal", weekMedian: "collection median, prior 7 days", lastSale: "the asset's own last sale" };
  for (const p of PREDICTORS) {
    const f = errorFigures(predictions, p);
    log(`| ${names[p]} | ${(f.mdape * 100).toFixed(1)}% | ${(f.within20 * 100).toFixed(1)}% |`);
  }
  const quintiles = calibration(predictions, 5).deciles;
  log("\n| confidence quintile | sales | mean confidence | within ±20% | gap |");
  log("|---|---|---|---|---|");
  quintiles.forEach((q, n) => log(`| ${n + 1} | ${q.count} | ${q.meanConfidence.toFixed(2)} | ${q.observed.toFixed(2)} | ${(q.meanConfidence - q.observed).toFixed(2)} |`));
  const worst = Math.max(...quintiles.map((q) => Math.abs(q.meanConfidence - q.observed)));
  log(`\nevery quintile within 0.05 of its hit rate: ${worst <= 0.05 ? "met" : "not met"} (largest gap ${worst.toFixed(2)})`);
} finally {
  await server?.stop();
  rmSync(dir, { recursive: true, force: true });
}
