import { existsSync, rmSync } from "node:fs";
import Database from "better-sqlite3";
import { join } from "node:path";
import { Command } from "commander";
import { keysFileOf } from "../src/store/sqlite/database.js";
import { ALL_ENDPOINTS, coldRequests, collectionAddresses, compare, ensureStore, hotPath, log, startCli, withLoadOptions } from "./harness.js";

// npm run bench:serve-ab -- --baseline DIR: this build of `serve` against
// another one (a checkout of an earlier revision, built), both at serve's
// defaults, in alternating rounds of one run: the before and after of a
// change, measured as docs/benchmarks.md asks (ratios from one run, medians).
// Make a baseline with: git worktree add /tmp/base REV && ln -s "$PWD/node_modules" /tmp/base/ && (cd /tmp/base && npm run build)

const program = withLoadOptions(
  new Command("bench:serve-ab")
    .description("this build of serve against a baseline build, hot and cold, in alternating rounds")
    .requiredOption("--baseline <dir>", "a built checkout of the revision to compare with (its src/bin/marketdata.js and dist/)")
    .option("--store <scale>", "demo store", "default")
    .option("--parts <list>", "hot,cold", "hot,cold")
    .option("--endpoints <list>", "endpoint paths (default: all eight)")
    .option("--baseline-store <path>", "the store the baseline serves, when this build's migrations took the demo store past the schema the baseline reads (a copy brought back to its version: the same rows)"),
).parse();
const opts = program.opts<{ baseline: string; store: string; parts: string; endpoints?: string; rounds: string; seconds: string; connections: string; baselineStore?: string }>();
const baselineBin = join(opts.baseline, "src/bin/marketdata.js");
if (!existsSync(baselineBin) || !existsSync(join(opts.baseline, "dist/src/cli/main.js"))) {
  process.stderr.write(`bench:serve-ab: ${opts.baseline} has no built command (${baselineBin} and dist/): build it first (see --help)\n`);
  process.exit(2);
}
const LOAD = { connections: Number(opts.connections), seconds: Number(opts.seconds), rounds: Number(opts.rounds) };
const endpoints = opts.endpoints?.split(",") ?? ALL_ENDPOINTS;
const { db, key } = ensureStore(opts.store);
// The baseline's store answers the same key: its keys are this store's (the key was made just now, perhaps still in the WAL).
if (opts.baselineStore !== undefined) {
  const to = keysFileOf(opts.baselineStore);
  for (const f of [to, `${to}-wal`, `${to}-shm`]) rmSync(f, { force: true });
  const keys = new Database(keysFileOf(db), { readonly: true });
  keys.prepare("VACUUM INTO ?").run(to);
  keys.close();
}
const cs = collectionAddresses(db);

for (const part of opts.parts.split(",")) {
  // Hot: the response cache answers; cold: distinct requests, cache off.
  const cacheMb = part === "hot" ? 64 : 0;
  const before = await startCli(opts.baselineStore ?? db, 1, cacheMb, ["--rate-limit", "0"], baselineBin);
  const after = await startCli(db, 1, cacheMb, ["--rate-limit", "0"]);
  // The cold lists are read through both servers alike (reading them warms the one asked).
  const cold = part === "cold" ? await coldRequests(after.url, key, cs) : {};
  if (part === "cold") await coldRequests(before.url, key, cs);
  log(`\n## ${opts.store} store, ${part}: baseline (${opts.baseline}) against this build (${LOAD.rounds} alternating rounds of ${LOAD.seconds} s, medians)\n`);
  log("| endpoint | before req/s | after req/s | after/before | CPU µs/req before | after | after/before |");
  log("|---|---|---|---|---|---|---|");
  for (const p of endpoints) {
    const paths = part === "hot" ? [hotPath(p, cs[0]!)] : cold[p]!;
    const r = await compare(
      [
        { name: "before", target: before, paths },
        { name: "after", target: after, paths },
      ],
      key,
      LOAD,
    );
    const [b, a] = [r.before!, r.after!];
    log(`| ${p} | ${b.rps.toFixed(0)} | ${a.rps.toFixed(0)} | ${(a.rps / b.rps).toFixed(2)} | ${b.cpuUs.toFixed(0)} | ${a.cpuUs.toFixed(0)} | ${(a.cpuUs / b.cpuUs).toFixed(2)} |`);
  }
  await before.stop();
  await after.stop();
}
