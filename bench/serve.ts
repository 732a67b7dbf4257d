import { basename } from "node:path";
import { writeFileSync } from "node:fs";
import * as grpc from "@grpc/grpc-js";
import { fromBinary, toBinary } from "@bufbuild/protobuf";
import { ALL_ENDPOINTS, coldRequests, collectionAddresses, compare, ensureStore, hotPath, log, median, ROOT, startCli, startTarget, withLoadOptions } from "./harness.js";
import { Command } from "commander";
import { ListSalesRequestSchema, ListSalesResponseSchema } from "../gen/marketdata/v1/asset_service_pb.js";

// npm run bench:serve — throughput and latency of every /v1 endpoint (see the
// bench/results/history.md, "Serving speed", for what is measured and why). Every comparison is
// a ratio from one run: rounds alternate between the servers compared, and
// medians are reported. Servers run in child processes; autocannon runs here.

const program = withLoadOptions(
  new Command("bench:serve")
    .description("benchmark the server against a bare Fastify ceiling and a hand-written service")
    .option("--stores <list>", "demo stores to run on", "default,large")
    .option("--parts <list>", "hot,cold,grpc,workers", "hot,cold,grpc,workers")
    .option("--endpoints <list>", "endpoint paths (default: all eight)")
    .option("--paced <rate>", "hot: also CPU per request of (a) and (b) at this many requests per second in all (0: not measured)", "8000"),
).parse();
const opts = program.opts<{ rounds: string; seconds: string; connections: string; stores: string; parts: string; endpoints?: string; paced: string }>();
const PACED = Number(opts.paced);
const ROUNDS = Number(opts.rounds);
const SECONDS = Number(opts.seconds);
const CONNECTIONS = Number(opts.connections);
const PARTS = new Set(opts.parts.split(","));

const LOAD = { connections: CONNECTIONS, seconds: SECONDS, rounds: ROUNDS };
const ENDPOINTS = opts.endpoints?.split(",") ?? ALL_ENDPOINTS;

const results: Record<string, unknown> = {};
const fmt = (n: number) => (Number.isFinite(n) ? n.toFixed(n < 10 ? 2 : 0) : "—");

for (const scale of opts.stores.split(",")) {
  const { db, key } = ensureStore(scale);
  const cs = collectionAddresses(db);
  const first = cs[0]!;
  // The service as `serve` starts it by default (one worker here, logging at
  // info, metrics on), with the rate limit off: one key drives all the load.
  const server = await startCli(db, 1, 64, ["--rate-limit", "0"]);
  const hotPaths = Object.fromEntries(ENDPOINTS.map((p) => [p, hotPath(p, first)]));
  const bodies: Record<string, string> = {};
  for (const p of ENDPOINTS) {
    const r = await fetch(`${server.url}${hotPaths[p]}`, { headers: { "x-api-key": key } });
    bodies[p] = Buffer.from(await r.arrayBuffer()).toString("base64");
  }
  const bytesFile = `${ROOT}data/bench-bytes-${basename(scale, ".sqlite")}.json`;
  writeFileSync(bytesFile, JSON.stringify(bodies));
  const bytes = await startTarget("bytes", db, bytesFile);
  const hand = await startTarget("handwritten", db);
  // A chain-sized store's requests rotate over its 10 largest collections and 10 spread through the rest (each gives ~1,000).
  const coldCollections = cs.length <= 20 ? cs : [...cs.slice(0, 10), ...Array.from({ length: 10 }, (_, i) => cs[10 + Math.floor((i * (cs.length - 10)) / 10)]!)];
  const cold = await coldRequests(server.url, key, coldCollections);
  // Kept for reproducing a cold run outside the bench (a profile of one endpoint, say).
  writeFileSync(`${ROOT}data/bench-cold-${basename(scale, ".sqlite")}.json`, JSON.stringify(cold));
  const uncached = await startCli(db, 1, 0, ["--rate-limit", "0"]);
  const storeResults: Record<string, unknown> = {};

  if (PARTS.has("hot")) {
    log(`\n## ${scale} store, hot: one request repeated (${ROUNDS} alternating rounds of ${SECONDS} s, ${CONNECTIONS} connections, medians)\n`);
    const paced = PACED > 0 ? ` | paced at ${PACED} req/s: CPU µs/req a | b | b/a` : "";
    log(`| endpoint | bytes | (a) server req/s | p99 ms | (b) bare bytes req/s | (c) hand-written req/s | a/b | a/c | CPU µs/req a | b | b/a${paced} |`);
    log(`|---|---|---|---|---|---|---|---|---|---|---|${PACED > 0 ? "---|---|---|" : ""}`);
    for (const p of ENDPOINTS) {
      const paths = [hotPaths[p]!];
      const r = await compare(
        [
          { name: "a", target: server, paths },
          { name: "b", target: bytes, paths: [p] },
          { name: "c", target: hand, paths },
        ],
        key,
        LOAD,
      );
      // Saturated, CPU per request moves with how many requests each turn
      // of a server's loop finds waiting (the busier server batches more):
      // at one fixed rate below both servers' capacity, both see the same
      // arrivals, and the CPU each spends per request is its own.
      const at =
        PACED > 0
          ? await compare(
              [
                { name: "a", target: server, paths },
                { name: "b", target: bytes, paths: [p] },
              ],
              key,
              { ...LOAD, overallRate: PACED },
            )
          : undefined;
      storeResults[`hot ${p}`] = { ...r, ...(at === undefined ? {} : { paced: at }) };
      const size = Buffer.from(bodies[p]!, "base64").length;
      const pacedCells = at === undefined ? "" : ` | ${fmt(at.a!.cpuUs)} | ${fmt(at.b!.cpuUs)} | ${(at.b!.cpuUs / at.a!.cpuUs).toFixed(2)}`;
      log(
        `| ${p} | ${size} | ${fmt(r.a!.rps)} | ${r.a!.p99} | ${fmt(r.b!.rps)} | ${fmt(r.c!.rps)} | ${(r.a!.rps / r.b!.rps).toFixed(2)} | ${(r.a!.rps / r.c!.rps).toFixed(2)} | ${fmt(r.a!.cpuUs)} | ${fmt(r.b!.cpuUs)} | ${(r.b!.cpuUs / r.a!.cpuUs).toFixed(2)}${pacedCells} |`,
      );
    }
  }

  if (PARTS.has("cold")) {
    log(`\n## ${scale} store, cold: distinct requests rotated, response cache off (--cache-mb 0)\n`);
    log("| endpoint | distinct requests | (a) server req/s | p99 ms | (b) bare bytes req/s | (c) hand-written req/s | p99 ms | a/b | a/c | CPU µs/req a | c | errors a/c |");
    log("|---|---|---|---|---|---|---|---|---|---|---|---|");
    for (const p of ENDPOINTS) {
      const paths = cold[p]!;
      const r = await compare(
        [
          { name: "a", target: uncached, paths },
          { name: "b", target: bytes, paths: [p] },
          { name: "c", target: hand, paths },
        ],
        key,
        LOAD,
      );
      storeResults[`cold ${p}`] = { ...r, distinct: paths.length };
      log(
        `| ${p} | ${paths.length} | ${fmt(r.a!.rps)} | ${r.a!.p99} | ${fmt(r.b!.rps)} | ${fmt(r.c!.rps)} | ${r.c!.p99} | ${(r.a!.rps / r.b!.rps).toFixed(3)} | ${(r.a!.rps / r.c!.rps).toFixed(2)} | ${fmt(r.a!.cpuUs)} | ${fmt(r.c!.cpuUs)} | ${r.a!.bad}/${r.c!.bad} |`,
      );
    }
    const mix = Object.values(cold).flat().filter((_, i) => i % 3 === 0);
    const r = await compare([{ name: "a", target: uncached, paths: mix }], key, LOAD);
    storeResults["cold mix"] = { ...r, distinct: mix.length };
    log(`\ncold mix of all endpoints (${mix.length} distinct): ${fmt(r.a!.rps)} req/s, p99 ${r.a!.p99} ms, ${fmt(r.a!.cpuUs)} µs CPU per request`);
  }

  if (PARTS.has("workers")) {
    log(`\n## ${scale} store, serve --workers 1 vs 2 (CLI, logging at info)\n`);
    // Unlimited: one bench key would otherwise meet the default rate limit (bench:hardening measures its cost).
    const w1 = await startCli(db, 1, 64, ["--rate-limit", "0"]);
    const w2 = await startCli(db, 2, 64, ["--rate-limit", "0"]);
    const mix = Object.values(cold).flat().filter((_, i) => i % 3 === 0);
    const hot = await compare(
      [
        { name: "w1", target: w1, paths: [hotPaths["/v1/asset/sales"]!] },
        { name: "w2", target: w2, paths: [hotPaths["/v1/asset/sales"]!] },
      ],
      key,
      LOAD,
    );
    const coldMix = await compare(
      [
        { name: "w1", target: w1, paths: mix },
        { name: "w2", target: w2, paths: mix },
      ],
      key,
      LOAD,
    );
    storeResults.workers = { hot, coldMix };
    log("| load | workers 1 req/s | workers 2 req/s | 2/1 |");
    log("|---|---|---|---|");
    log(`| hot sales | ${fmt(hot.w1!.rps)} | ${fmt(hot.w2!.rps)} | ${(hot.w2!.rps / hot.w1!.rps).toFixed(2)} |`);
    log(`| cold mix (cached after first use) | ${fmt(coldMix.w1!.rps)} | ${fmt(coldMix.w2!.rps)} | ${(coldMix.w2!.rps / coldMix.w1!.rps).toFixed(2)} |`);
    await w1.stop();
    await w2.stop();
  }

  if (PARTS.has("grpc") && scale === opts.stores.split(",")[0]) {
    log(`\n## gRPC unary ListSales (hot), @grpc/grpc-js client, 50 calls in flight\n`);
    const request = Buffer.from(toBinary(ListSalesRequestSchema, { $typeName: "marketdata.v1.ListSalesRequest", contractAddress: first, assetId: "", marketplace: "", cursor: "", limit: 20 } as never));
    const plain = await startPlainGrpc(server.url, request, key);
    const ours = server.url.replace("http://", "");
    const rates: Record<string, number[]> = { ours: [], plain: [] };
    for (let r = 0; r < ROUNDS; r++) {
      rates.ours!.push(await grpcLoad(ours, request, key));
      rates.plain!.push(await grpcLoad(plain.address, request, key));
    }
    plain.server.forceShutdown();
    const o = median(rates.ours!);
    const pl = median(rates.plain!);
    storeResults.grpc = { ours: o, plain: pl };
    log(`| server | calls/s |\n|---|---|\n| this server | ${fmt(o)} |\n| plain grpc-js server, same response bytes | ${fmt(pl)} |\n| ratio | ${(o / pl).toFixed(2)} |`);
  }

  results[scale] = storeResults;
  for (const t of [server, bytes, hand, uncached]) await t.stop();
}
writeFileSync(`${ROOT}data/bench-serve.json`, JSON.stringify(results, null, 2));
log(`\nresults: data/bench-serve.json`);

/** A plain grpc-js server answering ListSales with the bytes our server returns (the gRPC ceiling). */
async function startPlainGrpc(ourUrl: string, request: Buffer, key: string): Promise<{ server: grpc.Server; address: string }> {
  const client = new grpc.Client(ourUrl.replace("http://", ""), grpc.credentials.createInsecure());
  const md = new grpc.Metadata();
  md.set("x-api-key", key);
  const response = await new Promise<Buffer>((resolve, reject) =>
    client.makeUnaryRequest("/marketdata.v1.AssetService/ListSales", (b: Buffer) => b, (b: Buffer) => b, request, md, (err, v) =>
      err ? reject(err) : resolve(v!),
    ),
  );
  client.close();
  fromBinary(ListSalesResponseSchema, response); // it is a real response
  const server = new grpc.Server();
  server.addService(
    {
      ListSales: {
        path: "/marketdata.v1.AssetService/ListSales",
        requestStream: false,
        responseStream: false,
        requestSerialize: (b: Buffer) => b,
        requestDeserialize: (b: Buffer) => b,
        responseSerialize: (b: Buffer) => b,
        responseDeserialize: (b: Buffer) => b,
      },
    },
    { ListSales: (_call: unknown, cb: grpc.sendUnaryData<Buffer>) => cb(null, response) },
  );
  const port = await new Promise<number>((resolve, reject) =>
    server.bindAsync("127.0.0.1:0", grpc.ServerCredentials.createInsecure(), (err, p) => (err ? reject(err) : resolve(p))),
  );
  return { server, address: `127.0.0.1:${port}` };
}

async function grpcLoad(address: string, request: Buffer, key: string): Promise<number> {
  const client = new grpc.Client(address, grpc.credentials.createInsecure());
  const md = new grpc.Metadata();
  md.set("x-api-key", key);
  const deadline = performance.now() + SECONDS * 1000;
  let done = 0;
  const worker = async () => {
    while (performance.now() < deadline) {
      await new Promise<void>((resolve, reject) =>
        client.makeUnaryRequest("/marketdata.v1.AssetService/ListSales", (b: Buffer) => b, (b: Buffer) => b, request, md, (err) =>
          err ? reject(err) : resolve(),
        ),
      );
      done++;
    }
  };
  await Promise.all(Array.from({ length: CONNECTIONS }, worker));
  client.close();
  return done / SECONDS;
}
