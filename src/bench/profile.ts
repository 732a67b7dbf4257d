import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Command } from "commander";
import { collectionAddresses, ensureStore, hotPath, load, log, startCli, startTarget, type Target } from "./harness.js";

// npm run bench:profile — where a request's CPU goes: `marketdata serve` at
// its defaults under `node --cpu-prof`, one endpoint's load (one request
// repeated, or with --cold the bench:serve cold rotation with the response
// cache off), then the profile's self time per function, in µs per request.
// Before optimizing, this is what says what to remove (docs/benchmarks.md
// quotes its tables).

const opts = new Command("bench:profile")
  .description("profile `serve` under one endpoint's load and print where each request's CPU goes")
  .requiredOption("--endpoint <path>", "the endpoint, e.g. /v1/collection/stats")
  .option("--query <query>", "the request's query (default: the bench's hot request of the endpoint)")
  .option("--paths <file>", "a JSON list of request paths to rotate over (for example a cold list bench:serve wrote)")
  .option("--cold", "response cache off; without --paths, rotate data/bench-cold-<store>.json's requests of the endpoint", false)
  .option("--bare", "profile the bare route sending the same bytes (bench:serve's (b)) instead of `serve`", false)
  .option("--store <scale>", "demo store", "default")
  .option("--seconds <n>", "seconds of load", "10")
  .option("--connections <n>", "connections", "50")
  .option("--top <n>", "functions listed", "30")
  .parse()
  .opts<{ endpoint: string; query?: string; paths?: string; cold: boolean; bare: boolean; store: string; seconds: string; connections: string; top: string }>();

const { db, key } = ensureStore(opts.store);
const first = collectionAddresses(db)[0]!;
// --paths and --cold together: that list, with the response cache off.
const paths: string[] = opts.paths
  ? (JSON.parse(readFileSync(opts.paths, "utf8")) as string[])
  : opts.cold
    ? ((JSON.parse(readFileSync(db.replace(/bench-(\w+)\.sqlite$/, "bench-cold-$1.json"), "utf8")) as Record<string, string[]>)[opts.endpoint] ??
      [])
    : [opts.query === undefined ? hotPath(opts.endpoint, first) : `${opts.endpoint}?${opts.query}`];
if (paths.length === 0) throw new Error(`no requests for ${opts.endpoint} (run bench:serve once for the cold lists)`);

const dir = mkdtempSync(join(tmpdir(), "marketdata-profile-"));
try {
  const profiling = ["--cpu-prof", `--cpu-prof-dir=${dir}`];
  const server = opts.bare ? await bareRoute(paths[0]!, profiling) : await startCli(db, 1, opts.cold ? 0 : 64, ["--rate-limit", "0"], undefined, profiling);
  if (opts.bare) paths.splice(0, paths.length, opts.endpoint);
  // Warm up (JIT, caches), then the measured load.
  await load(server.url, paths, key, { connections: Number(opts.connections), seconds: 2 });
  const run = await load(server.url, paths, key, { connections: Number(opts.connections), seconds: Number(opts.seconds) });
  await server.stop();
  const file = readdirSync(dir).find((f) => f.endsWith(".cpuprofile"));
  if (file === undefined) throw new Error("serve wrote no profile");
  const requests = run.rps * Number(opts.seconds) + run.rps * 2; // the warm-up is in the profile too
  report(JSON.parse(readFileSync(join(dir, file), "utf8")) as CpuProfile, requests, run.rps);
} finally {
  rmSync(dir, { recursive: true, force: true });
}

/** bench:serve's bare route (b), answering the endpoint with the bytes `serve` answers `path` with. */
async function bareRoute(path: string, nodeArgs: string[]): Promise<Target> {
  const serve = await startCli(db, 1, 64, ["--rate-limit", "0"]);
  const body = Buffer.from(await (await fetch(`${serve.url}${path}`, { headers: { "x-api-key": key } })).arrayBuffer());
  await serve.stop();
  const file = join(dir, "bytes.json");
  writeFileSync(file, JSON.stringify({ [opts.endpoint]: body.toString("base64") }));
  return startTarget("bytes", db, file, nodeArgs);
}

interface CpuProfile {
  nodes: { id: number; callFrame: { functionName: string; url: string; lineNumber: number }; children?: number[] }[];
  samples: number[];
  timeDeltas: number[];
}

/** Self time per function (name and place), in µs per request, busiest first. */
function report(p: CpuProfile, requests: number, rps: number): void {
  const byId = new Map(p.nodes.map((n) => [n.id, n]));
  const self = new Map<string, number>();
  const groups = new Map<string, number>();
  let busy = 0;
  let idle = 0;
  for (let i = 0; i < p.samples.length; i++) {
    const node = byId.get(p.samples[i]!)!;
    const us = p.timeDeltas[i] ?? 0;
    const { functionName, url, lineNumber } = node.callFrame;
    if (functionName === "(idle)") {
      idle += us;
      continue;
    }
    busy += us;
    const place = url === "" ? "" : ` ${url.replace(/^.*\/(node_modules|src|dist)\//, "$1/")}:${lineNumber + 1}`;
    const name = `${functionName || "(anonymous)"}${place}`;
    self.set(name, (self.get(name) ?? 0) + us);
    const group = groupOf(url, functionName);
    groups.set(group, (groups.get(group) ?? 0) + us);
  }
  log(`\n${opts.endpoint}${opts.cold ? " (cold)" : ""}: ${rps.toFixed(0)} req/s; busy ${(busy / requests).toFixed(1)} µs per request, idle ${((idle / (busy + idle)) * 100).toFixed(0)}% of the profile\n`);
  log("| function (self time) | µs/request | share of busy |");
  log("|---|---|---|");
  for (const [name, us] of [...self].sort((a, b) => b[1] - a[1]).slice(0, Number(opts.top))) {
    log(`| ${name} | ${(us / requests).toFixed(2)} | ${((us / busy) * 100).toFixed(1)}% |`);
  }
  log("\n| where (self time) | µs/request | share of busy |");
  log("|---|---|---|");
  for (const [name, us] of [...groups].sort((a, b) => b[1] - a[1])) {
    log(`| ${name} | ${(us / requests).toFixed(2)} | ${((us / busy) * 100).toFixed(1)}% |`);
  }
}

/** A function's place, coarsely: this project's folder, a package, Node's own JavaScript, or native code. */
function groupOf(url: string, functionName: string): string {
  const pkg = /node_modules\/((?:@[^/]+\/)?[^/]+)\//.exec(url);
  if (pkg !== null) return pkg[1]!;
  const own = /\/(?:src|dist\/src)\/((?:[^/]+\/)?)/.exec(url);
  if (own !== null) return `src/${own[1]}`;
  if (url.startsWith("node:")) return "node (JavaScript)";
  if (url === "") return /^\(/.test(functionName) ? functionName : `native: ${functionName}`;
  return "other";
}
