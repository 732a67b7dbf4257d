import { type ChildProcess, fork, spawnSync } from "node:child_process";
import { existsSync, mkdirSync, readFileSync } from "node:fs";
import http from "node:http";
import { fileURLToPath } from "node:url";
import autocannon from "autocannon";
import type { Command } from "commander";
import { BIN, startServe } from "../src/cli/run-sync.js";
import { withStoreKeys } from "../src/store/sqlite/key-admin.js";
import { openReadOnly, openWritable } from "../src/store/sqlite/database.js";
import { Random } from "../src/demo/random.js";

// What the benchmarks share: the demo stores they run on, servers in child
// processes (so the load generator never shares their event loop), and
// autocannon rounds alternating between targets, reported as medians.

export const ROOT = fileURLToPath(new URL("..", import.meta.url));
const TARGETS = `${ROOT}bench/serve-targets.ts`;

export interface LoadOptions {
  connections: number;
  seconds: number;
  /** Requests per second in all (paced load); unset: as fast as the server answers. */
  overallRate?: number;
}

export const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
export const log = (s: string) => process.stderr.write(`${s}\n`);

/** The 50th and 99th percentiles of latencies (the value at that rank, no interpolation). */
export function percentiles(ms: number[]): { p50: number; p99: number } {
  const sorted = [...ms].sort((a, b) => a - b);
  return { p50: sorted[Math.floor(sorted.length * 0.5)]!, p99: sorted[Math.floor(sorted.length * 0.99)]! };
}

/** The p50 and p99 (ms) of `samples` calls of `fn` (given the call's number), after 20 to warm up. */
export async function timeCalls(samples: number, fn: (i: number) => unknown): Promise<{ p50: number; p99: number }> {
  for (let i = 0; i < 20; i++) await fn(i);
  const ms: number[] = [];
  for (let i = 0; i < samples; i++) {
    const t = performance.now();
    await fn(i);
    ms.push(performance.now() - t);
  }
  return percentiles(ms);
}

/** A markdown table of timed calls (timeCalls's figures), one row each. */
export function logTimings(rows: readonly [string, { p50: number; p99: number }][]): void {
  log("| call | p50 ms | p99 ms |");
  log("|---|---|---|");
  for (const [name, r] of rows) log(`| ${name} | ${r.p50.toFixed(3)} | ${r.p99.toFixed(3)} |`);
}

export function ensureStore(scale: string): { db: string; key: string } {
  // A store built elsewhere (bench:chain-store's): the path of its file.
  if (scale.endsWith(".sqlite")) {
    if (!existsSync(scale)) throw new Error(`${scale}: no such store (npm run bench:chain-store builds one)`);
    return { db: scale, key: benchKey(scale, "bench", null) };
  }
  mkdirSync(`${ROOT}data`, { recursive: true });
  const db = `${ROOT}data/bench-${scale}.sqlite`;
  if (!existsSync(db)) {
    log(`building the ${scale} demo store at ${db} (once)...`);
    const r = spawnSync(process.execPath, [BIN, "demo", "--db", db, "--scale", scale], { stdio: "inherit" });
    if (r.status !== 0) throw new Error("demo build failed");
  }
  return { db, key: benchKey(db, "bench", null) };
}

export const ALL_ENDPOINTS = [
  "/v1/asset/appraisals",
  "/v1/asset/rarity",
  "/v1/asset/sales",
  "/v1/asset/listings",
  "/v1/collection/stats",
  "/v1/collection/influencers",
  "/v1/collection/tweets",
  "/v1/collection/scores",
  // The analytics beside the published eight.
  "/v1/collection/floor",
  "/v1/collection/holders",
  "/v1/collection/stats/series",
  "/v1/asset/tokens",
  "/v1/collection/traits",
  "/v1/collections",
  "/v1/collection/activity",
];

/** The query of each endpoint's "hot" request (one page of a large collection). */
const HOT: Record<string, string> = {
  "/v1/asset/appraisals": "limit=20",
  "/v1/asset/rarity": "limit=20",
  "/v1/asset/sales": "limit=20",
  "/v1/asset/listings": "limit=20&status=CREATED",
  "/v1/collection/stats": "since=1790000000",
  "/v1/collection/influencers": "limit=20",
  "/v1/collection/tweets": "limit=20",
  "/v1/collection/scores": "",
  "/v1/collection/floor": "",
  "/v1/collection/holders": "limit=20",
  "/v1/collection/stats/series": "interval=day&since=1760000000",
  "/v1/asset/tokens": "sort=price&limit=20",
  "/v1/collection/traits": "",
  "/v1/collections": "sort=volume1d&limit=20",
  "/v1/collection/activity": "limit=20",
};

/** The endpoints of no one collection (the collections list). */
const STORE_WIDE = new Set(["/v1/collections"]);

export function hotPath(endpoint: string, collection: string): string {
  if (STORE_WIDE.has(endpoint)) return `${endpoint}?${HOT[endpoint]}`;
  return `${endpoint}?contractAddress=${collection}${HOT[endpoint] ? `&${HOT[endpoint]}` : ""}`;
}

/** The store's collections, largest (most tokens) first. */
export function collectionAddresses(path: string): string[] {
  const db = openReadOnly(path);
  const list = db
    .prepare("SELECT c.address FROM collections c ORDER BY (SELECT count(*) FROM tokens t WHERE t.collection_id = c.id) DESC, c.address")
    .pluck()
    .all() as string[];
  db.close();
  return list;
}

/** A key with its own rate limit (null: the server's default) in the bench store. */
export function benchKey(db: string, name: string, rateLimit: number | null, scope: "read" | "ingest" = "read"): string {
  openWritable(db).close();
  return withStoreKeys(db, (admin) => admin.create(name, { rateLimit, scope }).key);
}

export interface Target {
  url: string;
  child: ChildProcess;
  /** The process that serves (for its CPU time); undefined for a cluster, whose workers are other processes. */
  pid: number | undefined;
  eld(): Promise<{ eldP99Ms: number; eldMaxMs: number }>;
  reset(): void | Promise<void>;
  stop(): Promise<void>;
  /** What it printed so far (serve: its log); "" where it is not kept. */
  output(): string;
}

export function startTarget(kind: string, db: string, extra?: string, nodeArgs: string[] = []): Promise<Target> {
  const child = fork(TARGETS, [kind, db, ...(extra ? [extra] : [])], { execArgv: [...nodeArgs, "--import", "tsx"], stdio: ["ignore", "ignore", "inherit", "ipc"] });
  return new Promise((resolve, reject) => {
    child.once("exit", (code) => reject(new Error(`${kind} target exited with ${code}`)));
    child.once("message", (m: { url: string }) =>
      resolve({
        url: m.url,
        child,
        pid: child.pid,
        reset: () => void child.send("eld-reset"),
        output: () => "",
        eld: () =>
          new Promise((res) => {
            child.once("message", res as never);
            child.send("eld-report");
          }),
        stop: () =>
          new Promise((res) => {
            child.removeAllListeners("exit");
            child.once("exit", () => res());
            child.kill("SIGTERM");
          }),
      }),
    );
  });
}

/**
 * `marketdata serve` as an operator starts it: its own defaults (logging at
 * info, metrics on) unless `extra` says otherwise. Event-loop delay comes
 * from its /metrics (prom-client's p99 since the previous scrape), read on
 * the API port from this machine; with several workers it is one worker's.
 */
export async function startCli(db: string, workers: number, cacheMb: number, extra: string[] = [], bin?: string, nodeArgs?: string[]): Promise<Target> {
  const serve = await startServe(["--db", db, "--port", "0", "--workers", String(workers), "--cache-mb", String(cacheMb), ...extra], {
    ...(bin === undefined ? {} : { bin }),
    ...(nodeArgs === undefined ? {} : { nodeArgs }),
  });
  const scrape = async (): Promise<number> => {
    const r = await fetch(`${serve.url}/metrics`).catch(() => undefined);
    if (r === undefined || !r.ok) return Number.NaN;
    const m = /^nodejs_eventloop_lag_p99_seconds (\S+)$/m.exec(await r.text());
    return m === null ? Number.NaN : Number(m[1]) * 1000;
  };
  return {
    url: serve.url,
    child: serve.child,
    pid: workers === 1 ? serve.child.pid : undefined,
    reset: async () => void (await scrape()),
    eld: async () => ({ eldP99Ms: await scrape(), eldMaxMs: Number.NaN }),
    stop: () => serve.stop(),
    output: () => serve.output(),
  };
}

export interface Run {
  rps: number;
  p99: number;
  bad: number;
}

/**
 * CPU time (user + system) a process has used, in ms, from /proc (Linux;
 * NaN elsewhere). Per request, it is the server's own cost, which the
 * load generator sharing the machine's cores does not blur as it does
 * requests per second.
 */
export function cpuMs(pid: number | undefined): number {
  if (pid === undefined) return Number.NaN;
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]!.split(" ");
    return ((Number(fields[11]) + Number(fields[12])) * 1000) / CLOCK_TICKS;
  } catch {
    return Number.NaN;
  }
}
/** USER_HZ: 100 on every Linux architecture this runs on. */
const CLOCK_TICKS = 100;

/** One autocannon round rotating over `paths` (one global rotation, across connections). */
export async function load(url: string, paths: string[], key: string, o: LoadOptions): Promise<Run> {
  let i = 0;
  const result = await autocannon({
    url,
    connections: o.connections,
    duration: o.seconds,
    ...(o.overallRate === undefined ? {} : { overallRate: o.overallRate }),
    headers: { "x-api-key": key },
    requests: [
      {
        setupRequest: (req) => {
          req.path = paths[i++ % paths.length]!;
          return req;
        },
      },
    ],
  });
  return { rps: result.requests.total / o.seconds, p99: result.latency.p99, bad: result.non2xx + result.errors + result.timeouts };
}

/**
 * Round trips of single requests, one at a time on one keep-alive
 * connection: the latency a caller sees with the server otherwise idle. The
 * lists take turns request by request (a, b, c, a, b, c, ...), so drift on
 * this noisy machine falls on all of them alike. Each list is walked in its
 * order, from its start again when it ends. After 50 requests of each to
 * warm up.
 */
export async function roundTrips(url: string, key: string, lists: Record<string, string[]>, samples: number): Promise<Record<string, { p50: number; p99: number }>> {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  const get = (path: string) =>
    new Promise<void>((resolve, reject) => {
      const req = http.get(`${url}${path}`, { agent, headers: { "x-api-key": key } }, (res) => {
        if (res.statusCode !== 200) reject(new Error(`${path}: HTTP ${res.statusCode}`));
        res.resume();
        res.on("end", resolve);
      });
      req.on("error", reject);
    });
  const ms: Record<string, number[]> = {};
  const names = Object.keys(lists);
  try {
    for (let i = 0; i < 50 + samples; i++) {
      for (const name of names) {
        const paths = lists[name]!;
        const t = performance.now();
        await get(paths[i % paths.length]!);
        if (i >= 50) (ms[name] ??= []).push(performance.now() - t);
      }
    }
  } finally {
    agent.destroy();
  }
  return Object.fromEntries(names.map((n) => [n, percentiles(ms[n]!)]));
}

/** Alternating rounds over several targets: a, b, c, a, b, c, ... Medians per target. */
export async function compare(
  targets: { name: string; target: Target; paths: string[] }[],
  key: string,
  o: LoadOptions & { rounds: number },
): Promise<Record<string, { rps: number; p99: number; bad: number; eldP99Ms: number; cpuUs: number }>> {
  const runs: Record<string, (Run & { eldP99Ms: number; cpuUs: number })[]> = {};
  for (let r = 0; r < o.rounds; r++) {
    // Each round in the other order (ABBA...): the one measured second after a
    // round of load (sockets in TIME_WAIT, a busier kernel) is not always the same.
    for (const { name, target, paths } of r % 2 === 0 ? targets : [...targets].reverse()) {
      await target.reset();
      const before = cpuMs(target.pid);
      const run = await load(target.url, paths, key, o);
      const cpuUs = ((cpuMs(target.pid) - before) * 1000) / (run.rps * o.seconds);
      const { eldP99Ms } = await target.eld();
      (runs[name] ??= []).push({ ...run, eldP99Ms, cpuUs });
    }
  }
  return Object.fromEntries(
    Object.entries(runs).map(([name, rs]) => [
      name,
      {
        rps: median(rs.map((x) => x.rps)),
        p99: median(rs.map((x) => x.p99)),
        bad: rs.reduce((n, x) => n + x.bad, 0),
        eldP99Ms: median(rs.map((x) => x.eldP99Ms)),
        cpuUs: median(rs.map((x) => x.cpuUs)),
      },
    ]),
  );
}


/** The parsed load options (withLoadOptions) as numbers. */
export function loadOf(opts: { rounds: string; seconds: string; connections: string }): LoadOptions & { rounds: number } {
  return { connections: Number(opts.connections), seconds: Number(opts.seconds), rounds: Number(opts.rounds) };
}

/**
 * `writers` loops, each calling `tick` every `everyMs` for `seconds` (the
 * next call due on the clock, not after the last answer: a paced load),
 * started `w * 5` ms apart so that their calls do not all land at once.
 */
export async function pacedWriters(writers: number, everyMs: number, seconds: number, tick: (writer: number) => Promise<void>): Promise<void> {
  const end = performance.now() + seconds * 1000;
  await Promise.all(
    Array.from({ length: writers }, async (_, w) => {
      await new Promise((r) => setTimeout(r, w * 5));
      for (let due = performance.now(); due < end; due += everyMs) {
        const wait = due - performance.now();
        if (wait > 0) await new Promise((r) => setTimeout(r, wait));
        await tick(w);
      }
    }),
  );
}

/** The options of a benchmark run on both engines: which engines, the PostgreSQL server, and its rounds. */
export function withEngineOptions(cmd: Command): Command {
  return cmd
    .option("--engines <list>", "sqlite,postgres", "sqlite,postgres")
    .option("--pg <url>", "PostgreSQL server (a database of its own is created and dropped)", "postgres://postgres@127.0.0.1:5432/postgres")
    .option("--seconds <s>", "seconds per round", "5")
    .option("--rounds <n>", "rounds per figure (medians)", "3");
}

/** The load options every load benchmark takes: alternating rounds, seconds per round, connections. */
export function withLoadOptions(cmd: Command): Command {
  return cmd
    .option("--rounds <n>", "alternating rounds per comparison", "3")
    .option("--seconds <s>", "seconds per load round", "5")
    .option("--connections <n>", "autocannon connections", "50");
}

async function getJson(url: string, key: string): Promise<Record<string, unknown>> {
  const r = await fetch(url, { headers: { "x-api-key": key } });
  return (await r.json()) as Record<string, unknown>;
}

/** At least 1,000 distinct, valid requests per endpoint, cursors gathered by walking pages. */
export async function coldRequests(base: string, key: string, cs: string[]): Promise<Record<string, string[]>> {
  const rnd = new Random(7);
  const variants = (c: string) => [c, c.toUpperCase().replace("0X", "0x"), `0x${c.slice(2, 22).toUpperCase()}${c.slice(22)}`, `0x${c.slice(2, 22)}${c.slice(22).toUpperCase()}`];
  const out: Record<string, Set<string>> = {};
  const add = (path: string, q: Record<string, string | number | undefined>) => {
    const qs = Object.entries(q)
      .filter(([, v]) => v !== undefined)
      .map(([k, v]) => `${k}=${encodeURIComponent(String(v))}`)
      .join("&");
    (out[path] ??= new Set()).add(`${path}?${qs}`);
  };
  const walk = async (path: string, q: Record<string, string | number | undefined>, tokenField: string, pages: number) => {
    let cursor = "";
    for (let p = 0; p < pages; p++) {
      const query = { ...q, cursor: cursor || undefined };
      add(path, query);
      const body = await getJson(`${base}${path}?${new URLSearchParams(Object.entries(query).filter(([, v]) => v !== undefined).map(([k, v]) => [k, String(v)] as [string, string]))}`, key);
      cursor = String(body[tokenField] ?? "");
      if (!cursor) break;
    }
  };
  const marketplaces = ["OPENSEA", "BLUR", "LOOKSRARE", "X2Y2", "SUDOSWAP", "OTHER"];
  const statuses = ["CREATED", "FULFILLED", "CANCELLED", "EXPIRED"];
  for (const c of cs) {
    const sales = (await getJson(`${base}/v1/asset/sales?contractAddress=${c}&limit=50`, key)).data as { assetId: string; timestamp: number }[];
    const assets = [...new Set(sales.map((s) => s.assetId))];
    const latest = sales[0]?.timestamp ?? 1_790_000_000;
    for (const limit of [7, 20, 50]) {
      await walk("/v1/asset/appraisals", { contractAddress: c, limit }, "nextPage", 20);
      await walk("/v1/asset/rarity", { contractAddress: c, limit }, "nextPage", 20);
      await walk("/v1/asset/sales", { contractAddress: c, limit }, "cursor", 15);
      await walk("/v1/asset/listings", { contractAddress: c, limit }, "cursor", 15);
    }
    for (let i = 0; i < 200; i++) {
      const ids = Array.from({ length: rnd.int(1, 20) }, () => String(rnd.int(0, 999)));
      add("/v1/asset/appraisals", { contractAddress: c, assetId: ids.join(",") });
      add("/v1/asset/rarity", { contractAddress: c, assetId: ids.join(",") });
    }
    for (let i = 0; i < 220; i++) {
      const since = latest - rnd.int(3600, 730 * 86400);
      const until = rnd.next() < 0.5 ? undefined : since + rnd.int(3600, 90 * 86400);
      const assetId = rnd.next() < 0.4 ? assets[rnd.int(0, assets.length - 1)] : undefined;
      const marketplace = rnd.next() < 0.5 ? marketplaces[rnd.int(0, 5)] : undefined;
      add("/v1/asset/sales", { contractAddress: c, assetId, marketplace, since, until, limit: rnd.int(1, 50) });
      add("/v1/asset/listings", {
        contractAddress: c,
        assetId,
        marketplace,
        status: rnd.next() < 0.6 ? statuses[rnd.int(0, 3)] : undefined,
        limit: rnd.int(1, 50),
      });
      add("/v1/collection/stats", { contractAddress: c, assetId: rnd.next() < 0.3 ? assets[rnd.int(0, assets.length - 1)] : undefined, since, until });
    }
    for (const variant of variants(c)) {
      for (let limit = 1; limit <= 50; limit++) {
        add("/v1/collection/influencers", { contractAddress: variant, limit });
        add("/v1/collection/tweets", { contractAddress: variant, limit });
      }
    }
    for (const limit of [5, 20, 50]) await walk("/v1/collection/holders", { contractAddress: c, limit }, "nextPage", 30);
    for (const variant of variants(c)) for (let limit = 1; limit <= 50; limit++) add("/v1/collection/holders", { contractAddress: variant, limit });
    for (const variant of variants(c)) {
      for (const marketplace of [undefined, ...marketplaces]) add("/v1/collection/floor", { contractAddress: variant, marketplace });
    }
    // Tokens: each order, a trait's tokens by price, pages deep.
    const traits = (await getJson(`${base}/v1/collection/traits?contractAddress=${c}`, key)).data as { traitType: string; value: string }[];
    for (const sort of ["id", "price", "rarity", "recent"]) {
      for (const limit of [7, 20, 50]) await walk("/v1/asset/tokens", { contractAddress: c, sort, limit }, "nextPage", 10);
    }
    for (const t of traits) for (const sort of ["price", "rarity"]) await walk("/v1/asset/tokens", { contractAddress: c, trait: `${t.traitType}:${t.value}`, sort, limit: 20 }, "nextPage", 3);
    for (const variant of variants(c)) add("/v1/collection/traits", { contractAddress: variant });
    for (let i = 0; i < 250; i++) {
      add("/v1/collection/floor", { contractAddress: c, at: latest - rnd.int(0, 730 * 86400), marketplace: rnd.next() < 0.3 ? marketplaces[rnd.int(0, 5)] : undefined });
      const interval = (["hour", "day", "day", "week"] as const)[rnd.int(0, 3)]!;
      const since = latest - rnd.int(86400, 730 * 86400);
      const reach = interval === "hour" ? rnd.int(3600, 14 * 86400) : rnd.int(86400, 365 * 86400);
      add("/v1/collection/stats/series", {
        contractAddress: c,
        interval,
        since,
        until: since + reach,
        marketplace: rnd.next() < 0.3 ? marketplaces[rnd.int(0, 5)] : undefined,
        assetId: rnd.next() < 0.2 ? assets[rnd.int(0, assets.length - 1)] : undefined,
      });
    }
  }
  // The activity feed: each set of kinds and page size, pages deep.
  for (const c of cs) {
    for (const types of [undefined, "sale", "listing,offer", "sale,transfer", "transfer"]) {
      for (const limit of [7, 20, 50]) await walk("/v1/collection/activity", { contractAddress: c, types, limit }, "nextPage", 10);
    }
  }
  // The collections list: each order and page size, found by every text of the collections' names and addresses' first digits.
  const names = (await getJson(`${base}/v1/collections?limit=50`, key)).data as { name: string }[];
  const texts = [undefined, "0x", ...cs.map((c) => c.slice(0, 6)), ...names.flatMap((n) => n.name.toLowerCase().split(/\s+/)).filter((w) => w !== "")];
  for (const sort of ["volume1d", "volume7d", "floor", "sales"]) {
    for (const query of new Set(texts)) for (let limit = 1; limit <= 50; limit += 7) add("/v1/collections", { sort, query, limit });
  }
  for (let i = 0; i < 3000 && (out["/v1/collection/scores"]?.size ?? 0) < 1200; i++) {
    // Order is kept in the response, so each order of a subset is its own request.
    const pick = cs.filter(() => rnd.next() < 0.6).sort(() => rnd.next() - 0.5);
    if (pick.length === 0) pick.push(cs[rnd.int(0, cs.length - 1)]!);
    add("/v1/collection/scores", { contractAddress: pick.map((c) => (rnd.next() < 0.5 ? c : c.toUpperCase().replace("0X", "0x"))).join(",") });
  }
  return Object.fromEntries(Object.entries(out).map(([k, v]) => [k, [...v]]));
}

/** One `derived` line of serve's log (a background derive: server.ts logRefresh). */
export interface DerivedLine {
  mode: string;
  ms: number;
  fed: number;
  /** For each write it brought up to date, ms from its acknowledgement to this derive's commit. */
  waitedMs: number[];
}

/** The `derived` lines of a stretch of serve's log (whole lines). */
export function derivedLines(log: string): DerivedLine[] {
  return log
    .split("\n")
    .filter((l) => l.includes('"msg":"derived"'))
    .map((l) => JSON.parse(l) as DerivedLine);
}
