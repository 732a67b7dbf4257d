import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CollectionService } from "../../gen/marketdata/v1/collection_service_pb.js";
import { washFlagsOf } from "../../src/domain/wash.js";
import { MARKETPLACES } from "../support/fixture.js";
import { clientFor, restGet, startTestServer, type TestServer, transportFor } from "../support/server.js";
import { emptyStore, importRecords, withKeys } from "../support/engine.js";

// totalVolume is an exact wei sum, far above 2^64, for windows and assets.

const C = "0x1111111111111111111111111111111111111111";
const T0 = 1_650_000_000;

interface S {
  assetId: string;
  timestamp: number;
  price: bigint;
  marketplace: string;
}

let store: { target: string; cleanup(): Promise<void> };
let server: TestServer;
let key: string;
const sales: S[] = [];

beforeAll(async () => {
  store = await emptyStore();
  // Prices from 1 wei to ~10^40 wei: sums exceed 2^64 many times over, and a
  // few exceed what the SQL fast path can hold, forcing the exact BigInt path
  // on the windows that contain them.
  for (let i = 0; i < 400; i++) {
    const price =
      i % 97 === 5 ? 10n ** 40n + BigInt(i) : i % 3 === 0 ? 3n * 10n ** 19n + BigInt(i) * 999_999_937n : 2n ** 64n - 1n + BigInt(i);
    sales.push({ assetId: String(i % 25), timestamp: T0 + i * 600, price, marketplace: MARKETPLACES[(i * 7) % 4]! });
  }
  await importRecords(
    store.target,
    "sales",
    sales.map((s, i) => ({
      hash: `0x${i.toString(16).padStart(64, "0")}`,
      from: `0x${"2".repeat(40)}`,
      to: `0x${"3".repeat(40)}`,
      contractAddress: C,
      assetId: s.assetId,
      timestamp: s.timestamp,
      block: 15_000_000 + i,
      price: s.price.toString(),
      amountReceived: s.price.toString(),
      currency: "ETH",
      marketplace: s.marketplace,
    })),
  );
  key = (await withKeys(store.target, (admin) => admin.create("t"))).key;
  server = await startTestServer(store.target);
});
afterAll(async () => {
  await server.close();
  await store.cleanup();
});

/**
 * The stats of the sales `keep` chooses: of those no wash rule flags
 * (docs/wash-trades.md, the rules applied to all of them: here the 10^40
 * amounts, far above their neighbours), or of all with includeWash.
 */
function expected(keep: (s: S) => boolean, includeWash = false) {
  const masks = washFlagsOf(sales.map((s, i) => ({ id: i, assetId: s.assetId, seller: "2", buyer: "3", timestamp: s.timestamp, block: 15_000_000 + i,
    hash: i.toString(16).padStart(64, "0"), price: s.price })));
  const chosen = sales.filter((s, i) => keep(s) && (includeWash || masks.get(i) === 0));
  const groups = new Map<string, { n: number; v: bigint }>();
  for (const s of chosen) {
    const g = groups.get(s.marketplace) ?? { n: 0, v: 0n };
    g.n++;
    g.v += s.price;
    groups.set(s.marketplace, g);
  }
  return {
    contractAddress: C,
    totalNumSales: chosen.length,
    totalVolume: chosen.reduce((a, s) => a + s.price, 0n).toString(),
    currency: "ETH",
    groups: [...groups]
      .sort(([ma, a], [mb, b]) => (b.v > a.v ? 1 : b.v < a.v ? -1 : ma < mb ? -1 : 1))
      .map(([marketplace, g]) => ({ marketplace, totalNumSales: g.n, totalVolume: g.v.toString(), currency: "ETH" })),
  };
}

const at = (i: number) => T0 + i * 600;
const CASES: [string, Record<string, string | number>, (s: S) => boolean][] = [
  ["whole collection (includes 10^40 amounts)", {}, () => true],
  ["since only", { since: at(100) }, (s) => s.timestamp >= at(100)],
  ["until only", { until: at(50) }, (s) => s.timestamp <= at(50)],
  ["inclusive window without huge amounts", { since: at(6), until: at(101) }, (s) => s.timestamp >= at(6) && s.timestamp <= at(101)],
  ["one asset", { assetId: "5" }, (s) => s.assetId === "5"],
  ["one asset in a window", { assetId: "7", since: at(30), until: at(300) }, (s) => s.assetId === "7" && s.timestamp >= at(30) && s.timestamp <= at(300)],
  ["an empty window", { since: at(1000), until: at(2000) }, () => false],
];

/** Each case as answered by default (wash trades left out) and with includeWash (every sale: the 10^40 amounts too). */
const WITH_WASH = CASES.flatMap(([name, query, keep]) => [
  [name, query, keep, false] as const,
  [`${name}, includeWash`, { ...query, includeWash: "true" } as Record<string, string | number>, keep, true] as const,
]);

describe("collection stats sums", () => {
  it("the fixture really exceeds 2^64, and some of it is flagged", () => {
    expect(BigInt(expected(() => true, true).totalVolume) > 2n ** 64n * 100n).toBe(true);
    expect(expected(() => true).totalNumSales).toBeLessThan(expected(() => true, true).totalNumSales);
  });

  it.each(WITH_WASH)("REST: %s", async (_, query, keep, includeWash) => {
    const { status, body } = await restGet(server.baseUrl, "/v1/collection/stats", { contractAddress: C, ...query }, key);
    expect(status).toBe(200);
    expect(body).toEqual({ successful: 1, data: expected(keep, includeWash) });
  });

  it.each(WITH_WASH)("Connect: %s", async (_, query, keep, includeWash) => {
    const client = clientFor(CollectionService, transportFor("connect", server.baseUrl));
    const res = await client.getCollectionStats(
      {
        contractAddress: C,
        assetId: query.assetId === undefined ? "" : String(query.assetId),
        since: query.since === undefined ? undefined : BigInt(query.since),
        until: query.until === undefined ? undefined : BigInt(query.until),
        includeWash,
      },
      { headers: { "x-api-key": key } },
    );
    const e = expected(keep, includeWash);
    expect(res.data?.totalVolume).toBe(e.totalVolume);
    expect(Number(res.data?.totalNumSales)).toBe(e.totalNumSales);
    expect(res.data?.groups.map((g) => [g.marketplace, g.totalVolume])).toEqual(e.groups.map((g) => [g.marketplace, g.totalVolume]));
  });
});
