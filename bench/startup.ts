import { spawnSync } from "node:child_process";
import { Command } from "commander";
import { BIN, startServe } from "../src/cli/run-sync.js";
import { ensureStore, log, median } from "./harness.js";

// How long the CLI takes to start: `marketdata --version` (a command that
// needs nothing), and `serve` from spawn to its "listening" line (one
// worker), on the default demo store. Runs alternate nothing: each figure is
// the median of --runs separate processes.

const program = new Command("bench:startup")
  .description("time `marketdata --version` and `serve` until it listens")
  .option("--runs <n>", "processes per figure", "7")
  .option("--args <args>", "the quick command's arguments", "--version")
  .parse();
const opts = program.opts<{ runs: string; args: string }>();
const runs = Number(opts.runs);

function quick(): number {
  const started = performance.now();
  const r = spawnSync(process.execPath, [BIN, ...opts.args.split(" ")], { stdio: "ignore" });
  if (r.status !== 0) throw new Error(`marketdata ${opts.args} exited with ${r.status}`);
  return performance.now() - started;
}

async function serveReady(db: string): Promise<number> {
  const started = performance.now();
  const serve = await startServe(["--db", db, "--port", "0", "--workers", "1"]);
  const ms = performance.now() - started;
  await serve.stop();
  return ms;
}

const { db } = ensureStore("default");
const quickMs: number[] = [];
const serveMs: number[] = [];
for (let i = 0; i < runs; i++) {
  quickMs.push(quick());
  serveMs.push(await serveReady(db));
}
log(`| what (${runs} processes each, median) | ms |`);
log("|---|---|");
log(`| \`marketdata ${opts.args}\` | ${median(quickMs).toFixed(0)} |`);
log(`| \`serve\` until it listens (1 worker, default demo store) | ${median(serveMs).toFixed(0)} |`);
