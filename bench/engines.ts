import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { availableParallelism, tmpdir } from "node:os";
import { join } from "node:path";
import { Command } from "commander";
import pg from "pg";
import { Random } from "../src/demo/random.js";
import { openReadRepositories } from "../src/store/open.js";
import type { ReadRepositories } from "../src/store/ports/reads.js";
import { runCliSync } from "../src/cli/run-sync.js";
import { load, log, median, percentiles, startCli, startTarget, type Target, loadOf, withLoadOptions } from "./harness.js";
import { writeSales, YEAR } from "./sales-file.js";
import { allowReplication, createStandby, waitForReplay } from "../tools/deploy/standby.js";
import { measureCpu } from "./cpu.js";
import { randomWindow, WINDOW_SHAPES } from "./windows.js";

// npm run bench:engines — the same work on SQLite and on PostgreSQL in one
// run (issue 10): the import of a generated collection through the CLI
// (SQLite upserts vs COPY + merge), stats latency for every window shape on
// it, cold-path serving throughput (response cache off, distinct requests),
// and, on a pg_basebackup hot standby, one server against two.

const program = withLoadOptions(
  new Command("bench:engines")
    .description("SQLite beside PostgreSQL: import, stats latency, cold serving throughput, and two servers on a hot standby")
    .option("--pg <url>", "PostgreSQL server (a database of its own is created and dropped)", "postgres://postgres@127.0.0.1:5432/postgres")
    .option("--sales <n>", "sales in the generated collection", "1000000")
    .option("--parts <list>", "import,stats,serve,standby", "import,stats,serve,standby")
    .option("--samples <n>", "stats calls per window shape", "500")
    .option("--standby-port <port>", "port of the hot standby", "5433"),
).parse();
const opts = program.opts<{
  pg: string;
  sales: string;
  parts: string;
  samples: string;
  rounds: string;
  seconds: string;
  connections: string;
  standbyPort: string;
}>();
const PARTS = new Set(opts.parts.split(","));
const LOAD = loadOf(opts);
const ADDRESS = "0x00000000000000000000000000000000000e4c11";

const dir = mkdtempSync(join(tmpdir(), "marketdata-bench-engines-"));
const sqlite = join(dir, "bench.sqlite");
const dbName = `marketdata_bench_${process.pid}`;
const pgUrl = (() => {
  const u = new URL(opts.pg);
  u.pathname = `/${dbName}`;
  return u.toString();
})();
const admin = new pg.Client({ connectionString: opts.pg });
await admin.connect();
await admin.query(`CREATE DATABASE ${dbName}`);

function cli(args: string[]): string {
  const r = runCliSync(args);
  return r.stderr + r.stdout;
}
const key = (db: string) => cli(["keys", "create", "--db", db, "--name", "bench", "--rate", "1000000"]).trim().split("\n").pop()!.trim();

try {
  const n = Number(opts.sales);
  const file = join(dir, "sales.ndjson");
  log(`generating ${n} sales...`);
  await writeSales(file, n, 11, ADDRESS);

  log(`\n## import of ${n} sales into an empty store (the CLI: read, check, write, commit)\n`);
  log("| engine | rows/s | seconds |");
  log("|---|---|---|");
  for (const [engine, db] of [["SQLite", sqlite], ["PostgreSQL (COPY + merge)", pgUrl]] as const) {
    const t = performance.now();
    const out = cli(["import", "--db", db, "sales", file]);
    const s = (performance.now() - t) / 1000;
    log(`| ${engine} | ${out.match(/\((\d+) rows\/s\)/)?.[1]} | ${s.toFixed(1)} |`);
  }
  const keys = { sqlite: key(sqlite), pg: key(pgUrl) };

  if (PARTS.has("stats")) await statsLatency();
  if (PARTS.has("serve")) await coldServing(keys);
  if (PARTS.has("standby")) await standbyServers(keys.pg);
} finally {
  await admin.query(`DROP DATABASE IF EXISTS ${dbName} WITH (FORCE)`);
  await admin.end();
  rmSync(dir, { recursive: true, force: true });
}

async function span(store: ReadRepositories, id: number): Promise<{ first: number; last: number }> {
  const page = await store.sales.salesPage(id, {}, { limit: 1, after: null });
  const last = page.rows[0]!.timestamp;
  return { first: last - 2 * YEAR, last };
}

async function statsLatency(): Promise<void> {
  const samples = Number(opts.samples);
  const stores = { sqlite: await openReadRepositories(sqlite), pg: await openReadRepositories(pgUrl, { poolSize: 1 }) };
  log(`\n## stats latency on ${opts.sales} sales: one salesSummary call, ${samples} random windows per shape (the same windows on both)\n`);
  log("| window | assetId | SQLite p50 ms | p99 ms | PostgreSQL p50 ms | p99 ms |");
  log("|---|---|---|---|---|---|");
  try {
    const ids = { sqlite: (await stores.sqlite.collections.collectionId(ADDRESS))!, pg: (await stores.pg.collections.collectionId(ADDRESS))! };
    const { first, last } = await span(stores.sqlite, ids.sqlite);
    for (const assetId of [undefined, "0"]) {
      for (const [label, length] of WINDOW_SHAPES) {
        const rnd = new Random(length ?? 0);
        const windows = Array.from({ length: samples }, () => ({ ...randomWindow(first, last, length, rnd), assetId }));
        const times: Record<string, number[]> = { sqlite: [], pg: [] };
        // Alternating: one window on each engine in turn.
        for (const w of windows) {
          for (const e of ["sqlite", "pg"] as const) {
            const t = performance.now();
            await stores[e].sales.salesSummary(ids[e], w);
            times[e]!.push(performance.now() - t);
          }
        }
        const s = percentiles(times.sqlite!);
        const g = percentiles(times.pg!);
        log(`| ${label} | ${assetId ?? "-"} | ${s.p50.toFixed(3)} | ${s.p99.toFixed(3)} | ${g.p50.toFixed(3)} | ${g.p99.toFixed(3)} |`);
      }
    }
  } finally {
    await stores.sqlite.close();
    await stores.pg.close();
  }
}

/** Distinct requests: random stats windows, sales pages by window, asset and marketplace. */
async function coldPaths(): Promise<string[]> {
  const store = await openReadRepositories(sqlite);
  try {
    const id = (await store.collections.collectionId(ADDRESS))!;
    const { first, last } = await span(store, id);
    const rnd = new Random(3);
    const paths: string[] = [];
    for (let i = 0; i < 20_000; i++) {
      const w = randomWindow(first, last, -1, rnd);
      if (i % 2 === 0) paths.push(`/v1/collection/stats?contractAddress=${ADDRESS}&since=${w.since}&until=${w.until}`);
      else {
        const asset = rnd.next() < 0.3 ? `&assetId=${rnd.int(1, 9999)}` : "";
        const mp = rnd.next() < 0.3 ? `&marketplace=${["OPENSEA", "BLUR", "X2Y2"][rnd.int(0, 2)]}` : "";
        paths.push(`/v1/asset/sales?contractAddress=${ADDRESS}&until=${w.until}&limit=20${asset}${mp}`);
      }
    }
    return paths;
  } finally {
    await store.close();
  }
}

async function coldServing(keys: { sqlite: string; pg: string }): Promise<void> {
  const paths = await coldPaths();
  // One server process each (startServer, response cache off), the load generator in this process.
  const targets = { sqlite: await startTarget("server", sqlite, "0"), pg: await startTarget("server", pgUrl, "0") };
  try {
    const runs: Record<string, number[]> = { sqlite: [], pg: [] };
    const p99: Record<string, number[]> = { sqlite: [], pg: [] };
    for (let r = 0; r < LOAD.rounds; r++) {
      for (const e of ["sqlite", "pg"] as const) {
        const run = await load(targets[e].url, paths, keys[e], LOAD);
        if (run.bad > 0) throw new Error(`${e}: ${run.bad} failed requests`);
        runs[e]!.push(run.rps);
        p99[e]!.push(run.p99);
      }
    }
    const s = median(runs.sqlite!);
    const g = median(runs.pg!);
    log(`\n## cold serving: ${paths.length} distinct stats and sales requests rotated, response cache off, one process each (${LOAD.rounds} alternating rounds of ${LOAD.seconds} s, ${LOAD.connections} connections, medians)\n`);
    log("| engine | req/s | p99 ms |");
    log("|---|---|---|");
    log(`| SQLite | ${s.toFixed(0)} | ${median(p99.sqlite!)} |`);
    log(`| PostgreSQL (pool of 10) | ${g.toFixed(0)} | ${median(p99.pg!)} |`);
    log(`\nPostgreSQL / SQLite: ${(g / s).toFixed(2)}`);
  } finally {
    await targets.sqlite.stop();
    await targets.pg.stop();
  }
}

/** Sum of two autocannon runs at once, one per server (each half the connections). */
async function loadPair(a: Target, b: Target, paths: string[], k: string): Promise<number> {
  const half = { ...LOAD, connections: Math.max(1, Math.floor(LOAD.connections / 2)) };
  const [x, y] = await Promise.all([load(a.url, paths, k, half), load(b.url, paths, k, half)]);
  return x.rps + y.rps;
}

async function standbyServers(k: string): Promise<void> {
  await allowReplication(opts.pg);
  const standby = await createStandby(opts.pg, Number(opts.standbyPort), join(dir, "standby"));
  const servers: Target[] = [];
  try {
    await waitForReplay(pgUrl, standby.url(dbName));
    const paths = await coldPaths();
    const url = standby.url(dbName);
    servers.push(await startCli(url, 1, 0, ["--rate-limit", "0"]));
    servers.push(await startCli(url, 1, 0, ["--rate-limit", "0"]));
    // CPU per request of each part (both servers, the standby's postmaster
    // and backends, this process as the load generator) and the machine's
    // busy share: what limits the second server on this machine.
    const postmaster = Number(readFileSync(join(standby.dir, "postmaster.pid"), "utf8").split("\n")[0]);
    const groups = {
      servers: { pids: servers.map((s) => s.child.pid!), tree: true },
      standby: { pids: [postmaster], tree: true },
      loadgen: { pids: [process.pid], tree: false },
    };
    const one: number[] = [];
    const two: number[] = [];
    const use: Record<"one" | "two", { cpu: Record<string, number>; busy: number; total: number; requests: number }[]> = { one: [], two: [] };
    for (let r = 0; r < LOAD.rounds; r++) {
      const a = await measureCpu(groups, () => load(servers[0]!.url, paths, k, LOAD));
      one.push(a.result.rps);
      use.one.push({ cpu: a.cpu, ...a.machine, requests: a.result.rps * LOAD.seconds });
      const b = await measureCpu(groups, () => loadPair(servers[0]!, servers[1]!, paths, k));
      two.push(b.result);
      use.two.push({ cpu: b.cpu, ...b.machine, requests: b.result * LOAD.seconds });
    }
    const o = median(one);
    const t = median(two);
    log(`\n## the hot standby: one server against two (serve --workers 1 each, cache off, the same cold requests; ${LOAD.rounds} alternating rounds, medians)\n`);
    log("| servers | req/s | machine busy | CPU ms per request: servers | standby backends | load generator | all |");
    log("|---|---|---|---|---|---|---|");
    for (const [name, rps] of [["one", o], ["two", t]] as const) {
      const rounds = use[name];
      const per = (g: string) => median(rounds.map((u) => (1000 * u.cpu[g]!) / u.requests));
      const all = median(rounds.map((u) => (1000 * (u.cpu.servers! + u.cpu.standby! + u.cpu.loadgen!)) / u.requests));
      const busy = median(rounds.map((u) => u.busy / u.total));
      log(`| ${name} | ${rps.toFixed(0)} | ${(100 * busy).toFixed(0)}% | ${per("servers").toFixed(3)} | ${per("standby").toFixed(3)} | ${per("loadgen").toFixed(3)} | ${all.toFixed(3)} |`);
    }
    const perRequest = median(use.one.map((u) => (u.cpu.servers! + u.cpu.standby! + u.cpu.loadgen!) / u.requests));
    const cores = availableParallelism();
    log(`\ntwo / one: ${(t / o).toFixed(2)}. The machine's ${cores} cores at ${(perRequest * 1000).toFixed(3)} CPU ms per request (server + standby + load generator) allow at most ${(cores / perRequest).toFixed(0)} req/s whatever the number of servers: a second server adds throughput only where the first leaves cores idle.`);
  } finally {
    await Promise.all(servers.map((s) => s.stop()));
    await standby.destroy();
  }
}
