import { spawn, spawnSync } from "node:child_process";
import { Command } from "commander";
import { BIN } from "../cli/run-sync.js";
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

function serveReady(db: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const started = performance.now();
    const child = spawn(process.execPath, [BIN, "serve", "--db", db, "--port", "0", "--workers", "1"], { stdio: ["ignore", "pipe", "pipe"] });
    let seen = "";
    const early = (code: number | null) => reject(new Error(`serve exited with ${code}: ${seen}`));
    const onData = (c: Buffer) => {
      seen += c.toString();
      if (/listening at http/i.test(seen)) {
        const ms = performance.now() - started;
        child.off("exit", early);
        child.stdout.off("data", onData);
        child.stderr.off("data", onData);
        child.once("exit", () => resolve(ms));
        child.kill("SIGTERM");
      }
    };
    child.stdout.on("data", onData);
    child.stderr.on("data", onData);
    child.once("exit", early);
  });
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
