import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Command } from "commander";
import { collectionAddresses, ensureStore, hotPath, load, log, startCli, startTarget, type Target } from "./harness.js";
import { type CpuProfile, reportProfile } from "./cpu-profile.js";

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
const coldLists = db.replace(/bench-(\w+)\.sqlite$/, "bench-cold-$1.json");
if (opts.cold && opts.paths === undefined && !existsSync(coldLists)) {
  process.stderr.write(`bench:profile: --cold rotates the requests bench:serve writes to ${coldLists}: run \`npm run bench:serve -- --parts cold --stores ${opts.store}\` once first, or give --paths FILE\n`);
  process.exit(2);
}
const paths: string[] = opts.paths
  ? (JSON.parse(readFileSync(opts.paths, "utf8")) as string[])
  : opts.cold
    ? ((JSON.parse(readFileSync(coldLists, "utf8")) as Record<string, string[]>)[opts.endpoint] ?? [])
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
  log(`\n${opts.endpoint}${opts.cold ? " (cold)" : ""}: ${run.rps.toFixed(0)} req/s`);
  reportProfile(JSON.parse(readFileSync(join(dir, file), "utf8")) as CpuProfile, requests, "request", Number(opts.top));
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

