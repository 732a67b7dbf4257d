import { readFileSync } from "node:fs";
import net from "node:net";
import autocannon from "autocannon";
import { Command } from "commander";
import {
  ALL_ENDPOINTS,
  benchKey,
  collectionAddresses,
  ensureStore,
  hotPath,
  load,
  log,
  median,
  type Run,
  startCli,
  type Target,
} from "./harness.js";

// npm run bench:hardening — the hardening targets, measured on the CLI's own
// `serve` (child processes; autocannon and the hostile clients run here):
//   rate     a key limited to 100 req/s, hammered for --rate-seconds, across
//            2 workers (and 2 servers sharing Redis with --redis): accepted
//            req/s vs 100. Windows are one second from their first request,
//            each spendable at once, so a round can touch one window more
//            than its length: long rounds (20 s) keep that edge small
//   cost     throughput with rate limits counted vs off (workers 1: memory;
//            workers 2: the cluster primary over IPC), alternating rounds
//   soak     p99 of normal load with vs without 2,000 idle connections and a
//            slow-body client (alternating rounds), then 60 s with them:
//            errors, and the server's RSS after warm-up vs at the end
//   bad      what one refused ingest batch costs: the worst bodies a caller
//            can send within the limits, each timed, its answer's size, and
//            the longest a /healthz probe sent meanwhile waited (the event
//            loop busy on the bad request)

const program = new Command("bench:hardening")
  .description("rate-limit accuracy and cost, a soak under hostile connections, and what refusing bad input costs")
  .option("--parts <list>", "rate,cost,soak,bad", "rate,cost,soak,bad")
  .option("--rounds <n>", "alternating rounds per comparison", "3")
  .option("--seconds <s>", "seconds per round", "5")
  .option("--soak-seconds <s>", "length of the soak", "60")
  .option("--rate-seconds <s>", "length of each rate-limit round", "20")
  .option("--idle <n>", "idle connections held open during the soak", "2000")
  .option("--redis <url>", "also measure two servers sharing this Redis", "redis://127.0.0.1:6379")
  .parse();
const opts = program.opts<{ parts: string; rounds: string; seconds: string; soakSeconds: string; rateSeconds: string; idle: string; redis: string }>();
const PARTS = new Set(opts.parts.split(","));
const ROUNDS = Number(opts.rounds);
const SECONDS = Number(opts.seconds);
const CONNECTIONS = 50;

const { db, key } = ensureStore("default");
const first = collectionAddresses(db)[0]!;
const paths = ALL_ENDPOINTS.map((p) => hotPath(p, first));
const fmt = (n: number) => n.toFixed(n < 10 ? 2 : 0);

/** autocannon against several servers at once, counting 200s and 429s. */
async function hammer(urls: string[], k: string, seconds: number): Promise<{ ok: number; limited: number; other: number }> {
  const results = await Promise.all(
    urls.map((url) =>
      autocannon({ url: `${url}${paths[7]}`, connections: 10, duration: seconds, headers: { "x-api-key": k } }),
    ),
  );
  const sum = (f: (r: autocannon.Result) => number) => results.reduce((n, r) => n + f(r), 0);
  const ok = sum((r) => r["2xx"]);
  const limited = sum((r) => r.statusCodeStats?.["429"]?.count ?? 0);
  return { ok, limited, other: sum((r) => r.requests.total) - ok - limited };
}

if (PARTS.has("rate")) {
  log("\n## rate limit accuracy: a key limited to 100 req/s, hammered\n");
  const rateSeconds = Number(opts.rateSeconds);
  log(`${ROUNDS} rounds of ${rateSeconds} s, 10 connections per server\n`);
  log("| setup | accepted req/s (median of rounds) | vs 100 | refused (429) | other |");
  log("|---|---|---|---|---|");
  const limitedKey = benchKey(db, "bench:rate", 100);
  const setups: { name: string; start: () => Promise<Target[]> }[] = [
    { name: "1 server, 2 workers (cluster primary)", start: async () => [await startCli(db, 2, 64)] },
  ];
  if (opts.redis) {
    const prefix = `bench:${Date.now()}`;
    setups.push({
      name: "2 servers, 1 worker each, one Redis",
      start: async () => [
        await startCli(db, 1, 64, ["--redis", opts.redis, "--redis-prefix", prefix]),
        await startCli(db, 1, 64, ["--redis", opts.redis, "--redis-prefix", prefix]),
      ],
    });
  }
  for (const setup of setups) {
    const targets = await setup.start();
    const rates: number[] = [];
    let limited = 0;
    let other = 0;
    for (let r = 0; r < ROUNDS; r++) {
      const h = await hammer(
        targets.map((t) => t.url),
        limitedKey,
        rateSeconds,
      );
      rates.push(h.ok / rateSeconds);
      limited += h.limited;
      other += h.other;
    }
    const m = median(rates);
    log(`| ${setup.name} | ${fmt(m)} (${rates.map(fmt).join(", ")}) | ${(m / 100).toFixed(3)} | ${limited} | ${other} |`);
    for (const t of targets) await t.stop();
  }
}

if (PARTS.has("cost")) {
  log("\n## cost of counting: hot requests over all endpoints, one key, limits counted (limit never reached) vs off\n");
  log("| workers | counted req/s | off req/s | counted/off | p99 counted / off (ms) |");
  log("|---|---|---|---|---|");
  const unlimitedKey = benchKey(db, "bench:cost", 1_000_000_000);
  for (const workers of [1, 2]) {
    const counted = await startCli(db, workers, 64);
    const off = await startCli(db, workers, 64, ["--rate-limit", "0", "--anonymous-rate-limit", "0"]);
    const runs: Record<string, Run[]> = { counted: [], off: [] };
    for (let r = 0; r < ROUNDS; r++) {
      runs.counted!.push(await load(counted.url, paths, unlimitedKey, { connections: CONNECTIONS, seconds: SECONDS }));
      runs.off!.push(await load(off.url, paths, unlimitedKey, { connections: CONNECTIONS, seconds: SECONDS }));
    }
    const c = median(runs.counted!.map((x) => x.rps));
    const o = median(runs.off!.map((x) => x.rps));
    const p = (rs: Run[]) => median(rs.map((x) => x.p99));
    log(`| ${workers} | ${fmt(c)} | ${fmt(o)} | ${(c / o).toFixed(2)} | ${p(runs.counted!)} / ${p(runs.off!)} |`);
    await counted.stop();
    await off.stop();
  }
}

/** Idle connections kept at `n`: the server closes them (headers timeout) and they come back. */
function holdIdle(port: number, n: number): { open: () => number; stop: () => void } {
  const sockets = new Set<net.Socket>();
  let stopped = false;
  const openOne = () => {
    if (stopped) return;
    const s = net.connect(port, "127.0.0.1");
    s.on("error", () => {});
    s.on("close", () => {
      sockets.delete(s);
      setTimeout(openOne, 100);
    });
    sockets.add(s);
  };
  for (let i = 0; i < n; i++) setTimeout(openOne, i);
  return {
    open: () => sockets.size,
    stop: () => {
      stopped = true;
      for (const s of sockets) s.destroy();
    },
  };
}

/** A client uploading a body one byte every 500 ms, reopened when the server ends it (request timeout). */
function slowBody(port: number, k: string): { stop: () => void } {
  let stopped = false;
  let socket: net.Socket | undefined;
  let timer: NodeJS.Timeout | undefined;
  const start = () => {
    if (stopped) return;
    socket = net.connect(port, "127.0.0.1", () => {
      socket!.write(`POST /marketdata.v1.AssetService/ListSales HTTP/1.1\r\nHost: x\r\nx-api-key: ${k}\r\nContent-Type: application/proto\r\nContent-Length: 60000\r\n\r\n`);
      timer = setInterval(() => socket!.write("\n"), 500);
    });
    socket.on("error", () => {});
    socket.on("data", () => {});
    socket.on("close", () => {
      clearInterval(timer);
      setTimeout(start, 100);
    });
  };
  start();
  return {
    stop: () => {
      stopped = true;
      clearInterval(timer);
      socket?.destroy();
    },
  };
}

function rssMb(pid: number): number {
  const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, "utf8"));
  return Number(m![1]) / 1024;
}

if (PARTS.has("soak")) {
  const idleCount = Number(opts.idle);
  const soakSeconds = Number(opts.soakSeconds);
  log(`\n## soak: ${CONNECTIONS} connections over all endpoints; hostile: ${idleCount} idle connections + a slow-body client\n`);
  // One process (workers 1), so its RSS is the server's; rate limits off for the load's one key.
  const server = await startCli(db, 1, 64, ["--rate-limit", "0"]);
  const port = Number(new URL(server.url).port);
  const pid = server.child.pid!;
  await load(server.url, paths, key, { connections: CONNECTIONS, seconds: SECONDS }); // warm-up
  const p99: Record<string, number[]> = { quiet: [], hostile: [] };
  const bad: Record<string, number> = { quiet: 0, hostile: 0 };
  for (let r = 0; r < ROUNDS; r++) {
    const quiet = await load(server.url, paths, key, { connections: CONNECTIONS, seconds: SECONDS });
    p99.quiet!.push(quiet.p99);
    bad.quiet! += quiet.bad;
    const idle = holdIdle(port, idleCount);
    const slow = slowBody(port, key);
    await new Promise((res) => setTimeout(res, 2000));
    const hostile = await load(server.url, paths, key, { connections: CONNECTIONS, seconds: SECONDS });
    log(`round ${r + 1}: p99 quiet ${quiet.p99} ms, hostile ${hostile.p99} ms (${idle.open()} idle connections open)`);
    p99.hostile!.push(hostile.p99);
    bad.hostile! += hostile.bad;
    idle.stop();
    slow.stop();
    await new Promise((res) => setTimeout(res, 1000));
  }
  const q = median(p99.quiet!);
  const h = median(p99.hostile!);
  log(`\n| p99 quiet (ms) | p99 with hostile clients (ms) | ratio | errors quiet / hostile |`);
  log("|---|---|---|---|");
  log(`| ${q} | ${h} | ${(h / q).toFixed(2)} | ${bad.quiet} / ${bad.hostile} |`);

  log(`\n${soakSeconds} s soak with the hostile clients:`);
  const idle = holdIdle(port, idleCount);
  const slow = slowBody(port, key);
  await new Promise((res) => setTimeout(res, 2000));
  const samples: number[] = [];
  const sampler = setInterval(() => samples.push(rssMb(pid)), 1000);
  const soak = await load(server.url, paths, key, { connections: CONNECTIONS, seconds: soakSeconds });
  clearInterval(sampler);
  const openAtEnd = idle.open();
  idle.stop();
  slow.stop();
  // RSS saws up and down with garbage collection (tens of MB): a leak shows as
  // a higher median in the second half after warm-up (10 s) than in the first.
  const afterWarmUp = samples.slice(10);
  const half = Math.floor(afterWarmUp.length / 2);
  const warm = median(afterWarmUp.slice(0, half));
  const end = median(afterWarmUp.slice(half));
  log("| requests | req/s | errors (non-2xx, errors, timeouts) | p99 (ms) | RSS median, 1st half after warm-up (MB) | 2nd half (MB) | growth | idle connections open at end |");
  log("|---|---|---|---|---|---|---|---|");
  log(
    `| ${Math.round(soak.rps * soakSeconds)} | ${fmt(soak.rps)} | ${soak.bad} | ${soak.p99} | ${warm.toFixed(0)} | ${end.toFixed(0)} | ${(((end - warm) / warm) * 100).toFixed(1)}% | ${openAtEnd} |`,
  );
  log(`RSS every 5 s (MB): ${samples.filter((_, i) => i % 5 === 0).map((x) => x.toFixed(0)).join(" ")}`);
  await server.stop();
}

/** Bodies a caller can send that the server must refuse, each within the ingest limits (10,000 records, 16 MiB). */
function badBodies(): { name: string; body: Buffer; rpc?: boolean }[] {
  // Every field wrong, values long, names that exist on every object: each line costs the checks all they can.
  const line = JSON.stringify({
    hash: "h".repeat(400), from: "f".repeat(400), to: 7, contractAddress: [1, 2, 3], assetId: { a: 1 }, timestamp: -1,
    block: "x".repeat(200), price: "1.5e9", amountReceived: "-1", currency: "c".repeat(100), marketplace: "m".repeat(100),
    constructor: 1, toString: 2,
  }).replace(/}$/, ',"__proto__":3}');
  const lines = Math.min(10_000, Math.floor((16 * 1024 * 1024) / (line.length + 1)));
  return [
    { name: `${lines.toLocaleString("en")} invalid sales (${((lines * (line.length + 1)) / 2 ** 20).toFixed(1)} MiB), every field wrong`, body: Buffer.from(`${line}\n`.repeat(lines)) },
    { name: "one 16 MiB line (a name of 16 MiB)", body: Buffer.from(`${JSON.stringify({ hash: "0x1", name: "n".repeat(16 * 1024 * 1024 - 40) })}\n`) },
    { name: "one line nested 1,000,000 deep (2 MB)", body: Buffer.from(`{"hash":${"[".repeat(1_000_000)}${"]".repeat(1_000_000)}}\n`) },
    { name: "16 MiB that is not UTF-8", body: Buffer.alloc(16 * 1024 * 1024 - 1, 0xff) },
    { name: "IngestSales over Connect JSON, nested 1,900,000 deep (3.8 MB)", body: Buffer.from(`{"records":${"[".repeat(1_900_000)}${"]".repeat(1_900_000)}}`), rpc: true },
  ];
}

if (PARTS.has("bad")) {
  log(`\n## bad input: one refused ingest batch at a time (workers 1), ${ROUNDS} rounds each, medians\n`);
  // No limits: the /healthz probe would spend its address's anonymous allowance, which a key not yet looked up is counted against.
  const server = await startCli(db, 1, 64, ["--rate-limit", "0", "--anonymous-rate-limit", "0", "--ingest-rate-limit", "0"]);
  const writer = benchKey(db, "bench-bad", null, "ingest");
  log("| body | status | answer (bytes) | request (ms) | longest /healthz wait meanwhile (ms) | /healthz wait, quiet (ms) |");
  log("|---|---|---|---|---|---|");
  /** Probes /healthz one after another until stopped; answers the longest wait. */
  const probe = () => {
    let stop = false;
    let longest = 0;
    const done = (async () => {
      while (!stop) {
        const t = performance.now();
        await (await fetch(`${server.url}/healthz`)).arrayBuffer();
        longest = Math.max(longest, performance.now() - t);
      }
      return longest;
    })();
    return { stop: async () => ((stop = true), done) };
  };
  for (const { name, body, rpc } of badBodies()) {
    const quiet: number[] = [];
    const waits: number[] = [];
    const times: number[] = [];
    let status = 0;
    let bytes = 0;
    for (let r = 0; r < ROUNDS; r++) {
      const idle = probe();
      await new Promise((res) => setTimeout(res, 500));
      quiet.push(await idle.stop());
      const busy = probe();
      const t = performance.now();
      const res = await fetch(`${server.url}${rpc ? "/marketdata.v1.IngestService/IngestSales" : "/v1/ingest/sales"}`, {
        method: "POST",
        headers: { "x-api-key": writer, "content-type": rpc ? "application/json" : "application/x-ndjson" },
        body,
      });
      const answer = Buffer.from(await res.arrayBuffer());
      bytes = answer.byteLength;
      if (res.status !== 400) log(`${name}: ${res.status} ${answer.toString("utf8", 0, 300)}`);
      times.push(performance.now() - t);
      status = res.status;
      waits.push(await busy.stop());
    }
    log(`| ${name} | ${status} | ${bytes.toLocaleString("en")} | ${median(times).toFixed(0)} | ${median(waits).toFixed(1)} | ${median(quiet).toFixed(1)} |`);
  }
  await server.stop();
}
