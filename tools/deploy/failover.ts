import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { createClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { Command } from "commander";
import { AssetService } from "../../gen/marketdata/v1/asset_service_pb.js";
import { runCliSync, type ServeProcess, startServe } from "../../src/cli/run-sync.js";
import { Formation, hasAutoFailover } from "./auto-failover.js";

// The failover drill (issue 37), end to end on one machine: a
// pg_auto_failover formation (auto-failover.ts: monitor, primary,
// synchronous standby), `serve` on a multi-host URL of both nodes (reads
// prefer the standby, writes go to whichever node takes them), 20 writers
// ingesting sales through the API, a live-feed subscriber on each. Then:
// 1. SIGKILL of the primary's postmaster mid-load: the monitor promotes the
//    standby; the time from the kill to the first acknowledged write sent
//    after it, every acknowledged sale present afterwards, and each feed
//    resumed from its last token delivering every sale once, in order.
// 2. No primary at all (the monitor stopped so that nothing is promoted,
//    then the primary's whole node killed): writes answered 503 with
//    Retry-After (never a wrong answer), reads served by the standby with
//    everything acknowledged.
// `npm run deploy:failover -- --help`; test/deploy/failover.test.ts runs it.

const COLLECTION = `0x${"fa".repeat(20)}`;

export interface FailoverOptions {
  /** Ports of the monitor and the two nodes (three from this one). */
  basePort: number;
  writers: number;
  /** Sales per ingest request. */
  batch: number;
  /** Seconds of load before the kill, and after the first acknowledgement that follows it. */
  beforeSeconds: number;
  afterSeconds: number;
  /** Also run step 2 (no primary at all). */
  noPrimary: boolean;
  log?: (line: string) => void;
}

export interface FailoverReport {
  /** Milliseconds to create the formation (monitor, primary, standby). */
  formationMs: number;
  killedNode: string;
  promotedNode: string;
  /** From the SIGKILL to the first acknowledgement of a request sent after it. */
  firstAckAfterKillMs: number;
  /** From the SIGKILL until the monitor reported the standby promoted. */
  promotedAfterMs: number;
  /** Requests answered 200, and what the others were answered, by status ("error" when no answer came). */
  acknowledgedRequests: number;
  refusals: Record<string, number>;
  /** The servers' log lines of internal errors (answered 500): none expected. */
  internalErrors: string[];
  /** Every refusal a 503 carried Retry-After. */
  retryAfterOnEvery503: boolean;
  acknowledgedSales: number;
  /** Acknowledged sales not in the store afterwards (must be 0). */
  lostSales: number;
  /** totalNumSales the server answers afterwards (acknowledged, plus any committed whose answer was lost). */
  storedSales: number;
  /** Each server's feed: sales delivered (and distinct), duplicates, out of each writer's order, resumptions. */
  feeds: { server: string; delivered: number; distinct: number; duplicates: number; outOfOrder: number; resumed: number }[];
  /** Step 2: answers while no node took writes. */
  noPrimary?: {
    ingestStatus: number;
    ingestRetryAfter: string | null;
    connectCode: string;
    readStatus: number;
    readTotal: number;
  };
}

interface Ack {
  hashes: string[];
  sentAt: number;
  at: number;
}

const hashOf = (writer: number, n: number) => `0x${(writer + 1).toString(16).padStart(4, "0")}${n.toString(16).padStart(60, "0")}`;

function saleLine(writer: number, n: number): string {
  return JSON.stringify({
    hash: hashOf(writer, n),
    from: `0x${"1".repeat(40)}`,
    to: `0x${"2".repeat(40)}`,
    contractAddress: COLLECTION,
    assetId: String(n % 97),
    timestamp: 1_700_000_000 + n,
    block: 18_000_000 + n,
    price: String(10n ** 15n * BigInt(1 + (n % 50))),
    amountReceived: String(10n ** 15n),
    currency: "ETH",
    marketplace: "OPENSEA",
  });
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function post(url: string, key: string, kind: string, lines: string[]): Promise<{ status: number; retryAfter: string | null }> {
  try {
    const r = await fetch(`${url}/v1/ingest/${kind}`, {
      method: "POST",
      headers: { "content-type": "application/x-ndjson", "x-api-key": key },
      body: lines.join("\n"),
      signal: AbortSignal.timeout(30_000),
    });
    await r.arrayBuffer();
    return { status: r.status, retryAfter: r.headers.get("retry-after") };
  } catch {
    return { status: 0, retryAfter: null };
  }
}

// includeWash: every stored sale counts, the flagged ones too (its prices put some under a tenth of their neighbours' median).
async function totalSales(url: string, key: string): Promise<{ status: number; total: number }> {
  const r = await fetch(`${url}/v1/collection/stats?contractAddress=${COLLECTION}&includeWash=true`, { headers: { "x-api-key": key } });
  const body = (await r.json().catch(() => ({}))) as { data?: { totalNumSales?: number } };
  return { status: r.status, total: body.data?.totalNumSales ?? 0 };
}

interface Feed {
  hashes: string[];
  seen: Set<string>;
  duplicates: number;
  resumed: number;
  /** Resolves at the first message (the position): the feed is live. */
  live: Promise<void>;
  /** Ends the current stream; the feed resumes from its last token once `until` resolves. */
  interrupt(until: Promise<unknown>): void;
}

/** WatchSales of the drill's collection over gRPC, resumed from its last token whenever it ends, until `signal`. */
function watch(url: string, key: string, signal: AbortSignal): Feed {
  let live: () => void = () => {};
  let current = new AbortController();
  let paused: Promise<unknown> = Promise.resolve();
  const feed: Feed = {
    hashes: [],
    seen: new Set(),
    duplicates: 0,
    resumed: 0,
    live: new Promise<void>((resolve) => (live = resolve)),
    interrupt(until) {
      paused = until;
      current.abort();
    },
  };
  const client = createClient(AssetService, createGrpcTransport({ baseUrl: url }));
  void (async () => {
    let cursor = "";
    while (!signal.aborted) {
      current = new AbortController();
      try {
        for await (const m of client.watchSales({ contractAddress: COLLECTION, cursor }, { headers: { "x-api-key": key }, signal: AbortSignal.any([signal, current.signal]) })) {
          cursor = m.resumeToken;
          live();
          if (m.sale === undefined) continue;
          if (feed.seen.has(m.sale.hash)) feed.duplicates++;
          feed.seen.add(m.sale.hash);
          feed.hashes.push(m.sale.hash);
        }
      } catch {
        // ended (unavailable during the failover, or aborted): resume from the token
      }
      if (signal.aborted) break;
      await paused;
      feed.resumed++;
      await sleep(200);
    }
  })();
  return feed;
}

/** Sales a feed delivered before an earlier one of the same writer (each writer's were written in order). */
function outOfOrder(hashes: string[]): number {
  const last = new Map<string, number>();
  let n = 0;
  for (const h of hashes) {
    const w = h.slice(2, 6);
    const i = Number.parseInt(h.slice(6), 16);
    if ((last.get(w) ?? -1) > i) n++;
    last.set(w, i);
  }
  return n;
}

export async function runFailoverDrill(o: FailoverOptions): Promise<FailoverReport> {
  if (!hasAutoFailover()) throw new Error("pg_auto_failover is not installed (Debian: apt-get install postgresql-15-auto-failover)");
  const log = o.log ?? (() => {});
  const tmp = mkdtempSync(join(tmpdir(), "marketdata-failover-"));
  const formation = new Formation({ dir: join(tmp, "formation"), ports: [o.basePort, o.basePort + 1, o.basePort + 2], dbname: "marketdata", log });
  const servers: ServeProcess[] = [];
  const abort = new AbortController();
  let writesBack: () => void = () => {};
  // Interrupted (Ctrl-C), the formation is torn down all the same: its keepers run detached and would outlive this process.
  const interrupted = () => {
    void Promise.all(servers.map((s) => s.stop())).finally(() => formation.destroy().finally(() => process.exit(130)));
  };
  process.once("SIGINT", interrupted);
  process.once("SIGTERM", interrupted);
  try {
    const started = Date.now();
    await formation.create();
    const formationMs = Date.now() - started;
    log(`formation up in ${formationMs} ms: ${JSON.stringify(await formation.state())}`);
    const writeUrl = formation.url("read-write");
    const cli = (args: string[]) => runCliSync(args, 120_000).stdout;
    cli(["migrate", "--db", writeUrl]);
    const ingestKey = cli(["keys", "create", "--db", writeUrl, "--name", "indexer", "--scope", "ingest"]).trim().split("\n").pop()!.trim();
    const readKey = cli(["keys", "create", "--db", writeUrl, "--name", "reader"]).trim().split("\n").pop()!.trim();
    // Two servers on the same two hosts: one reads wherever writes go (its
    // feed loses its connection with the primary and resumes), one prefers the standby.
    const targets = ["read-write", "prefer-standby"] as const;
    for (const target of targets) {
      servers.push(
        await startServe(["--db", formation.url(target), "--port", "0", "--workers", "1", "--rate-limit", "0", "--ingest-rate-limit", "0", "--no-derive-refresh"], {
          timeoutMs: 60_000,
        }),
      );
      log(`serve on ${formation.url(target)}: ${servers.at(-1)!.url}`);
    }
    const urls = servers.map((s) => s.url);
    const made = await post(urls[0]!, ingestKey, "collections", [JSON.stringify({ contractAddress: COLLECTION, name: "failover drill" })]);
    if (made.status !== 200) throw new Error(`creating the collection answered ${made.status}`);

    // A feed on each server: WatchSales over gRPC, resumed from its last token whenever it ends.
    const feeds = urls.map((url) => watch(url, readKey, abort.signal));
    // The first message (the position) says a feed is live: every sale written from now on is its to deliver.
    await Promise.race([Promise.all(feeds.map((f) => f.live)), sleep(30_000).then(() => Promise.reject(new Error("the feeds did not start within 30 s")))]);

    // The writers: each sends its own numbered sales, a batch at a time, resending a refused batch (a caller's retry) after 100 ms.
    const acks: Ack[] = [];
    const refusals: Record<string, number> = {};
    let retryAfterOnEvery503 = true;
    let writing = true;
    const writers = Array.from({ length: o.writers }, async (_, w) => {
      let n = 0;
      while (writing) {
        const hashes: string[] = [];
        const lines: string[] = [];
        for (let i = 0; i < o.batch; i++, n++) {
          hashes.push(hashOf(w, n));
          lines.push(saleLine(w, n));
        }
        for (;;) {
          const sentAt = Date.now();
          const r = await post(urls[w % urls.length]!, ingestKey, "sales", lines);
          if (r.status === 200) {
            acks.push({ hashes, sentAt, at: Date.now() });
            break;
          }
          refusals[r.status === 0 ? "error" : String(r.status)] = (refusals[r.status === 0 ? "error" : String(r.status)] ?? 0) + 1;
          if (r.status === 503 && r.retryAfter === null) retryAfterOnEvery503 = false;
          if (!writing) break;
          await sleep(100);
        }
      }
    });

    await sleep(o.beforeSeconds * 1000);
    const victim = (await formation.primary())?.name;
    if (victim === undefined) throw new Error("no primary before the kill");
    // The first server's subscriber leaves with the primary and comes back from its token once writes are acknowledged again.
    feeds[0]!.interrupt(new Promise<void>((resolve) => (writesBack = resolve)));
    const killedAt = Date.now();
    formation.killPostmaster(victim);
    log(`SIGKILL of ${victim}'s postmaster after ${acks.length} acknowledged requests`);
    const promoted = await formation.waitForStates(
      (ns) => ns.some((n) => n.name !== victim && (n.reported === "wait_primary" || n.reported === "primary")),
      120_000,
      "the standby's promotion",
    );
    const promotedAfterMs = Date.now() - killedAt;
    const promotedNode = promoted.find((n) => n.name !== victim)!.name;
    log(`${promotedNode} promoted ${promotedAfterMs} ms after the kill`);
    let firstAfter: Ack | undefined;
    for (const deadline = Date.now() + 120_000; firstAfter === undefined && Date.now() < deadline; await sleep(20)) {
      firstAfter = acks.filter((a) => a.sentAt > killedAt).sort((a, b) => a.at - b.at)[0];
    }
    if (firstAfter === undefined) {
      throw new Error(`no write was acknowledged within 120 s of the kill (refusals ${JSON.stringify(refusals)}); the servers' logs end:\n${servers.map((s) => s.output().trim().split("\n").slice(-10).join("\n")).join("\n")}`);
    }
    const firstAckAfterKillMs = firstAfter.at - killedAt;
    writesBack();
    log(`first acknowledged write sent after the kill: ${firstAckAfterKillMs} ms after it`);
    await sleep(o.afterSeconds * 1000);
    writing = false;
    await Promise.all(writers);

    const acknowledged = new Set(acks.flatMap((a) => a.hashes));
    // Every acknowledged sale reaches each feed (they read the store); then the feeds and the store's count agree.
    let stored = 0;
    for (const deadline = Date.now() + 60_000; Date.now() < deadline; await sleep(100)) {
      stored = (await totalSales(urls[0]!, readKey)).total;
      if (feeds.every((f) => [...acknowledged].every((h) => f.seen.has(h)) && f.seen.size >= stored)) break;
    }
    const lostSales = [...acknowledged].filter((h) => !feeds[0]!.seen.has(h)).length;
    log(`acknowledged ${acknowledged.size} sales; lost ${lostSales}; stored ${stored}; feeds ${feeds.map((f) => `${f.seen.size} (${f.duplicates} duplicates, resumed ${f.resumed} times)`).join(", ")}`);

    // What the servers logged as internal errors (a 500), for the report: there should be none.
    const internalErrors = servers.flatMap((s) => s.output().split("\n").filter((l) => l.includes('"msg":"internal error"')).map((l) => l.slice(0, 2000)));
    const report: FailoverReport = {
      internalErrors,
      formationMs,
      killedNode: victim,
      promotedNode,
      firstAckAfterKillMs,
      promotedAfterMs,
      acknowledgedRequests: acks.length,
      refusals,
      retryAfterOnEvery503,
      acknowledgedSales: acknowledged.size,
      lostSales,
      storedSales: stored,
      feeds: feeds.map((f, i) => ({ server: targets[i]!, delivered: f.hashes.length, distinct: f.seen.size, duplicates: f.duplicates, outOfOrder: outOfOrder(f.hashes), resumed: f.resumed })),
    };

    if (o.noPrimary) {
      // 2. No primary: the monitor stopped first, so that nothing is promoted; then the primary's whole node.
      await formation.waitForStates((ns) => ns.some((n) => n.reported === "secondary") && ns.some((n) => n.reported === "primary"), 120_000, "the old primary to rejoin as a standby");
      const primary = (await formation.primary())!.name;
      await formation.stop("monitor");
      await formation.killNode(primary);
      log(`monitor stopped, ${primary} killed (keeper and PostgreSQL): no node takes writes`);
      const line = [saleLine(999, 0)];
      const url = urls[1]!;
      let ingest = await post(url, ingestKey, "sales", line);
      // The server may first try its old connection: the second answer is the settled one.
      ingest = await post(url, ingestKey, "sales", line);
      const connect = await fetch(`${url}/marketdata.v1.IngestService/IngestSales`, {
        method: "POST",
        headers: { "content-type": "application/json", "x-api-key": ingestKey },
        body: JSON.stringify({ records: [JSON.parse(line[0]!)] }),
      });
      const connectBody = (await connect.json().catch(() => ({}))) as { code?: string };
      const read = await totalSales(url, readKey);
      log(`no primary: ingest ${ingest.status} (Retry-After ${ingest.retryAfter}), Connect ${connectBody.code}, read ${read.status} (${read.total} sales)`);
      report.noPrimary = {
        ingestStatus: ingest.status,
        ingestRetryAfter: ingest.retryAfter,
        connectCode: connectBody.code ?? "",
        readStatus: read.status,
        readTotal: read.total,
      };
    }
    return report;
  } finally {
    process.off("SIGINT", interrupted);
    process.off("SIGTERM", interrupted);
    abort.abort();
    writesBack();
    await Promise.all(servers.map((s) => s.stop()));
    await formation.destroy();
    rmSync(tmp, { recursive: true, force: true });
  }
}

function positive(program: Command, flag: string, v: string): number {
  if (!/^[1-9]\d{0,5}$/.test(v)) program.error(`${flag} must be a positive integer, got ${JSON.stringify(v)}`);
  return Number(v);
}

async function main(argv: string[]): Promise<void> {
  const program = new Command("deploy:failover")
    .description(
      "build a pg_auto_failover formation on this machine (monitor, primary, synchronous standby: three clusters on ports from --base-port), " +
        "serve on both nodes' multi-host URL, kill the primary's postmaster under 20 writers and report the failover; then tear it down",
    )
    .option("--base-port <port>", "the monitor's port; the nodes take the next two", "6100")
    .option("--writers <n>", "concurrent writers", "20")
    .option("--batch <n>", "sales per ingest request", "20")
    .option("--before <s>", "seconds of load before the kill", "3")
    .option("--after <s>", "seconds of load after the first acknowledgement that follows the kill", "3")
    .option("--no-primary-step", "skip step 2 (no primary at all: 503 with Retry-After, reads from the standby)")
    .parse(argv);
  const opts = program.opts<{ basePort: string; writers: string; batch: string; before: string; after: string; primaryStep: boolean }>();
  const report = await runFailoverDrill({
    basePort: positive(program, "--base-port", opts.basePort),
    writers: positive(program, "--writers", opts.writers),
    batch: positive(program, "--batch", opts.batch),
    beforeSeconds: positive(program, "--before", opts.before),
    afterSeconds: positive(program, "--after", opts.after),
    noPrimary: opts.primaryStep,
    log: (line) => process.stderr.write(`${line}\n`),
  });
  process.stdout.write(`${JSON.stringify(report, null, 2)}\n`);
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  main(process.argv).catch((err: unknown) => {
    process.stderr.write(`deploy:failover: ${err instanceof Error ? err.message : String(err)}\n`);
    process.exit(1);
  });
}
