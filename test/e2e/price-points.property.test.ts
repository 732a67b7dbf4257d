import { create } from "@bufbuild/protobuf";
import { createClient } from "@connectrpc/connect";
import { describe, expect, it } from "vitest";
import { AssetService } from "../../gen/marketdata/v1/asset_service_pb.js";
import { IngestPricesRequestSchema, IngestService } from "../../gen/marketdata/v1/ingest_service_pb.js";
import { Random } from "../../src/demo/random.js";
import { restGet, transportFor, useEmptyStoreServer } from "../support/server.js";

// Price points (docs/money.md), on either engine: whatever order the sales
// and the points arrive in (points before and after the sales they price,
// a minute's point sent again with another price, over REST and over the
// RPC), every sale answers priceUsd = price × the point in force at its
// time (ETH's for ETH, WETH and Blur's pool ETH: the latest at or before it,
// within a day), to the cent, or "" with none; on the REST JSON kept per
// row, on the binary encoded from its columns and on a token's last sale.

const s = useEmptyStoreServer({ ingestRateLimit: 0 });

const DAY = 86_400;
const ALICE = "0x000000000000000000000000000000000000a11c";
const BOB = "0x0000000000000000000000000000000000000b0b";
const CURRENCIES = ["ETH", "WETH", "BLUR_POOL"];

interface SaleLine { hash: string; assetId: string; contractAddress: string; timestamp: number; price: string; currency: string }
interface Point { currency: string; minute: number; usd: string }

async function post(kind: string, records: readonly object[]): Promise<void> {
  const r = await fetch(`${s.server.baseUrl}/v1/ingest/${kind}`, {
    method: "POST",
    headers: { "x-api-key": s.ingest, "content-type": "application/x-ndjson" },
    body: records.map((x) => JSON.stringify(x)).join("\n") + "\n",
  });
  expect(r.status, await r.clone().text()).toBe(200);
}

/** The oracle: price × the latest point at or before the sale, within a day, half up to the cent (in BigInt, apart from the code under test). */
function expectedUsd(sale: SaleLine, points: ReadonlyMap<number, string>): string {
  let best: number | undefined;
  for (const minute of points.keys()) if (minute <= sale.timestamp && minute > sale.timestamp - DAY && (best === undefined || minute > best)) best = minute;
  if (best === undefined) return "";
  const [whole, fraction = ""] = points.get(best)!.split(".");
  const micro = BigInt(whole!) * 1_000_000n + BigInt(fraction.padEnd(6, "0"));
  const cents = (BigInt(sale.price) * micro + 5n * 10n ** 21n) / 10n ** 22n;
  return `${cents / 100n}.${(cents % 100n).toString().padStart(2, "0")}`;
}

describe("price points: a sale's priceUsd is its price times the point in force, in any arrival order", () => {
  it("holds on the REST JSON, the binary and a token's last sale, over rounds of shuffled sales and points", async () => {
    const ingest = createClient(IngestService, transportFor("connect", s.server.baseUrl));
    const asset = createClient(AssetService, transportFor("grpc", s.server.baseUrl));
    const points = new Map<number, string>();
    const sales: SaleLine[] = [];
    // Rounds far apart in time: each round's points are the only ones within a day of its sales.
    const start = Math.floor(Date.now() / 1000 / 60) * 60 - 40 * DAY;
    for (let round = 0; round < 4; round++) {
      const rnd = new Random(53 + round);
      const contractAddress = `0x${(0xd100 + round).toString(16).padStart(40, "0")}`;
      const from = start + round * 8 * DAY;
      const roundSales: SaleLine[] = Array.from({ length: 30 }, (_, i) => ({
        hash: `0x${(round * 1000 + i).toString(16).padStart(64, "0")}`, assetId: String(i), contractAddress,
        timestamp: from + rnd.int(0, 3 * DAY), price: (BigInt(rnd.int(1, 50_000)) * 10n ** 14n + BigInt(rnd.int(0, 999))).toString(), currency: rnd.pick(CURRENCIES),
      }));
      // Points over the round and a day before it (some sales have none in force: the first points come later than them), a few minutes sent twice.
      const roundPoints: Point[] = Array.from({ length: 12 }, () => ({
        currency: "ETH", minute: from - DAY + rnd.int(0, 4 * 24 * 60) * 60, usd: `${rnd.int(800, 5000)}.${String(rnd.int(0, 999_999)).padStart(6, "0")}`,
      }));
      for (let k = 0; k < 3; k++) roundPoints.push({ ...roundPoints[rnd.int(0, roundPoints.length - 1)]!, usd: `${rnd.int(800, 5000)}.5` });
      // Shuffled into batches of one kind each, in any order; some point batches over the RPC.
      const batches: { kind: "sales" | "prices"; records: object[] }[] = [];
      const queue = [...roundSales.map((x) => ({ kind: "sales" as const, x })), ...roundPoints.map((x) => ({ kind: "prices" as const, x }))];
      for (let i = queue.length - 1; i > 0; i--) {
        const j = rnd.int(0, i);
        [queue[i], queue[j]] = [queue[j]!, queue[i]!];
      }
      for (const { kind, x } of queue) {
        const last = batches.at(-1);
        if (last !== undefined && last.kind === kind && last.records.length < 4) last.records.push(x);
        else batches.push({ kind, records: [x] });
      }
      for (const [n, b] of batches.entries()) {
        if (b.kind === "sales") {
          await post("sales", b.records.map((x) => ({ ...x, from: ALICE, to: BOB, block: 100, amountReceived: (x as SaleLine).price, marketplace: "OPENSEA" })));
        } else if (n % 2 === 0) {
          await post("prices", b.records);
        } else {
          const p = b.records as Point[];
          const answer = await ingest.ingestPrices(create(IngestPricesRequestSchema, { records: p.map((x) => ({ ...x, minute: BigInt(x.minute) })) }), { headers: { "x-api-key": s.ingest } });
          expect(answer.rejected).toEqual([]);
        }
        // The later record of a minute wins, as the store takes them.
        for (const r of b.kind === "prices" ? (b.records as Point[]) : []) points.set(r.minute, r.usd);
      }
      sales.push(...roundSales);

      // Every sale so far, on every read.
      for (const c of new Set(sales.map((x) => x.contractAddress))) {
        const mine = sales.filter((x) => x.contractAddress === c);
        const want = new Map(mine.map((x) => [`${x.hash}:${x.assetId}`, expectedUsd(x, points)]));
        const rest = (await restGet(s.server.baseUrl, "/v1/asset/sales", { contractAddress: c, limit: "50" }, s.read)).body.data as { hash: string; assetId: string; priceUsd: string }[];
        expect(rest).toHaveLength(mine.length);
        expect(new Map(rest.map((x) => [`${x.hash}:${x.assetId}`, x.priceUsd]))).toEqual(want);
        const rpc = await asset.listSales({ contractAddress: c, limit: 50 }, { headers: { "x-api-key": s.read } });
        expect(new Map(rpc.data.map((x) => [`${x.hash}:${x.assetId}`, x.priceUsd]))).toEqual(want);
        const tokens = (await restGet(s.server.baseUrl, "/v1/asset/tokens", { contractAddress: c, limit: "50" }, s.read)).body.data as { lastSale: { hash: string; assetId: string; priceUsd: string } }[];
        for (const t of tokens) expect(t.lastSale.priceUsd).toBe(want.get(`${t.lastSale.hash}:${t.lastSale.assetId}`));
      }
    }
    // Both kinds of answer occur: sales with a point in force and sales with none.
    const all = sales.map((x) => expectedUsd(x, points));
    expect(all.some((x) => x === "") && all.some((x) => x !== "")).toBe(true);
  });
});
