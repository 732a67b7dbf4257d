import { create } from "@bufbuild/protobuf";
import { createClient } from "@connectrpc/connect";
import { describe, expect, it } from "vitest";
import { AssetService } from "../../gen/marketdata/v1/asset_service_pb.js";
import { CollectionService } from "../../gen/marketdata/v1/collection_service_pb.js";
import { IngestPricesRequestSchema, IngestService } from "../../gen/marketdata/v1/ingest_service_pb.js";
import { Random } from "../../src/demo/random.js";
import { restGet, transportFor, useEmptyStoreServer } from "../support/server.js";
import { intervalStart, type SeriesInterval } from "../../src/domain/series.js";

// Price points (docs/money.md), on either engine: whatever order the sales
// and the points arrive in (points before and after the sales they price,
// a minute's point sent again with another price, over REST and over the
// RPC), every sale answers priceUsd = price × the point in force at its
// time (ETH's for ETH, WETH and Blur's pool ETH: the latest at or before it,
// within a day), to the cent, or "" with none; on the REST JSON kept per
// row, on the binary encoded from its columns and on a token's last sale;
// and stats with currency=usd sum each marketplace's sales at their points
// exactly, rounded once (docs/money.md, "Stats in USD"), for any window and
// one asset, with the sales that have no point counted and told.

const s = useEmptyStoreServer({ ingestRateLimit: 0 });

const DAY = 86_400;
const ALICE = "0x000000000000000000000000000000000000a11c";
const BOB = "0x0000000000000000000000000000000000000b0b";
const CURRENCIES = ["ETH", "WETH", "BLUR_POOL"];

interface SaleLine {
  hash: string; assetId: string; contractAddress: string; timestamp: number; price: string; amountReceived: string; currency: string; marketplace: string;
  marketplaceFee?: string; royaltyFee?: string;
}
interface Point { currency: string; minute: number; usd: string }

async function post(kind: string, records: readonly object[]): Promise<void> {
  const r = await fetch(`${s.server.baseUrl}/v1/ingest/${kind}`, {
    method: "POST",
    headers: { "x-api-key": s.ingest, "content-type": "application/x-ndjson" },
    body: records.map((x) => JSON.stringify(x)).join("\n") + "\n",
  });
  expect(r.status, await r.clone().text()).toBe(200);
}

/** The oracle's exact product: an amount of the sale (wei: its price unless told) × the latest point at or before the sale, within a day, in millionths of a dollar; undefined with none. */
function exactUsd(sale: SaleLine, points: ReadonlyMap<number, string>, amount = sale.price): bigint | undefined {
  let best: number | undefined;
  for (const minute of points.keys()) if (minute <= sale.timestamp && minute > sale.timestamp - DAY && (best === undefined || minute > best)) best = minute;
  if (best === undefined) return undefined;
  const [whole, fraction = ""] = points.get(best)!.split(".");
  return BigInt(amount) * (BigInt(whole!) * 1_000_000n + BigInt(fraction.padEnd(6, "0")));
}

/** The oracle's dollars to the cent, half up, of an exact product (in BigInt, apart from the code under test). */
function toDollars(exact: bigint): string {
  const cents = (exact + 5n * 10n ** 21n) / 10n ** 22n;
  return `${cents / 100n}.${(cents % 100n).toString().padStart(2, "0")}`;
}

function expectedUsd(sale: SaleLine, points: ReadonlyMap<number, string>, amount = sale.price): string {
  const exact = exactUsd(sale, points, amount);
  return exact === undefined ? "" : toDollars(exact);
}

/** The oracle's sale amounts with currency=usd: each at the sale's point, "" with none, an untold fee "". */
function expectedInUsd(x: SaleLine, points: ReadonlyMap<number, string>): string[] {
  const usd = (amount: string | undefined) => (amount === undefined ? "" : expectedUsd(x, points, amount));
  return [usd(x.price), usd(x.amountReceived), usd(x.marketplaceFee), usd(x.royaltyFee), "USD", usd(x.price)];
}
type UsdAmounts = { hash: string; assetId: string; price: string; amountReceived: string; marketplaceFee: string; royaltyFee: string; currency: string; priceUsd: string };
const inUsd = (x: UsdAmounts) => [x.price, x.amountReceived, x.marketplaceFee, x.royaltyFee, x.currency, x.priceUsd];

type UsdStats = { totalNumSales: number; totalVolume: string; currency: string; unpricedNumSales: number; groups: { marketplace: string; totalNumSales: number; totalVolume: string; currency: string; unpricedNumSales: number }[] };

/** The oracle's stats in USD of `sales`: each marketplace's exact sum rounded once, by volume then marketplace, the total their sum. */
function expectedUsdStats(sales: readonly SaleLine[], points: ReadonlyMap<number, string>): Omit<UsdStats, "currency" | "groups"> & { groups: Omit<UsdStats["groups"][number], "currency">[] } {
  const by = new Map<string, { n: number; unpriced: number; exact: bigint }>();
  for (const x of sales) {
    const m = by.get(x.marketplace) ?? { n: 0, unpriced: 0, exact: 0n };
    const exact = exactUsd(x, points);
    by.set(x.marketplace, { n: m.n + 1, unpriced: m.unpriced + (exact === undefined ? 1 : 0), exact: m.exact + (exact ?? 0n) });
  }
  const cents = (d: string) => BigInt(d.replace(".", ""));
  const groups = [...by].map(([marketplace, m]) => ({ marketplace, totalNumSales: m.n, totalVolume: toDollars(m.exact), unpricedNumSales: m.unpriced }))
    .sort((a, b) => (cents(a.totalVolume) === cents(b.totalVolume) ? (a.marketplace < b.marketplace ? -1 : 1) : cents(a.totalVolume) > cents(b.totalVolume) ? -1 : 1));
  const total = groups.reduce((t, g) => t + cents(g.totalVolume), 0n);
  return {
    totalNumSales: sales.length, totalVolume: toDollars(total * 10n ** 22n), unpricedNumSales: groups.reduce((n, g) => n + g.unpricedNumSales, 0), groups,
  };
}

const MARKETPLACES = ["OPENSEA", "BLUR", "X2Y2"];

type UsdBucket = { start: number; totalNumSales: number; totalVolume: string; minPrice: string; currency: string; unpricedNumSales: number };

/** The oracle's series in USD of `sales`: per interval with sales, the count, the exact sum rounded once, the sales without a point. */
function expectedUsdSeries(sales: readonly SaleLine[], points: ReadonlyMap<number, string>, interval: SeriesInterval): Map<number, [number, string, number]> {
  const by = new Map<number, { n: number; exact: bigint; unpriced: number }>();
  for (const x of sales) {
    const start = intervalStart(interval, x.timestamp);
    const b = by.get(start) ?? { n: 0, exact: 0n, unpriced: 0 };
    const exact = exactUsd(x, points);
    by.set(start, { n: b.n + 1, exact: b.exact + (exact ?? 0n), unpriced: b.unpriced + (exact === undefined ? 1 : 0) });
  }
  return new Map([...by].map(([start, b]) => [start, [b.n, toDollars(b.exact), b.unpriced]]));
}

/**
 * The series in USD (currency=usd) and the collections list's dollars, kept
 * with the aggregates, against the oracle: every interval of each span with
 * and without the flagged sales, over REST; the list's three windows.
 */
async function expectKeptUsd(c: string, mine: readonly SaleLine[], clean: readonly SaleLine[], points: ReadonlyMap<number, string>): Promise<void> {
  for (const interval of ["hour", "day", "week"] as const) {
    for (const [includeWash, which] of [[false, clean], [true, mine]] as const) {
      const answer = await restGet(s.server.baseUrl, "/v1/collection/stats/series", { contractAddress: c, interval, currency: "usd", ...(includeWash ? { includeWash: "true" } : {}) }, s.read);
      expect(answer.status, JSON.stringify(answer.body)).toBe(200);
      const got = answer.body as { data: UsdBucket[] };
      const withSales = new Map(got.data.filter((b) => b.totalNumSales > 0).map((b) => [Number(b.start), [b.totalNumSales, b.totalVolume, b.unpricedNumSales] as [number, string, number]]));
      expect(withSales, `${c} ${interval} includeWash=${includeWash}`).toEqual(expectedUsdSeries(which, points, interval));
      expect(got.data.every((b) => b.currency === "USD" && b.minPrice === "")).toBe(true);
    }
    // Without the parameter, the series' answer as before: in wei, no count of unpriced sales.
    const plain = (await restGet(s.server.baseUrl, "/v1/collection/stats/series", { contractAddress: c, interval }, s.read)).body as { data: Record<string, unknown>[] };
    expect(Object.keys(plain.data[0]!)).toEqual(["start", "end", "totalNumSales", "totalVolume", "minPrice", "maxPrice", "firstPrice", "lastPrice", "currency"]);
  }
  for (const includeWash of [false, true]) {
    const list = (await restGet(s.server.baseUrl, "/v1/collections", { query: c, ...(includeWash ? { includeWash: "true" } : {}) }, s.read)).body as
      { windowsEnd: number; data: { contractAddress: string; volumeUsd1d: string; volumeUsd7d: string; volumeUsd30d: string }[] };
    const hour = Number(list.windowsEnd) / 3600 - 1;
    const within = (days: number) => (includeWash ? mine : clean).filter((x) => Math.floor(x.timestamp / 3600) >= hour - days * 24 + 1);
    const sum = (xs: readonly SaleLine[]) => toDollars(xs.reduce((t, x) => t + (exactUsd(x, points) ?? 0n), 0n));
    expect(list.data.map((x) => [x.contractAddress, x.volumeUsd1d, x.volumeUsd7d, x.volumeUsd30d]), `${c} list includeWash=${includeWash}`)
      .toEqual([[c, sum(within(1)), sum(within(7)), sum(within(30))]]);
  }
}

describe("price points: a sale's priceUsd is its price times the point in force, in any arrival order", () => {
  it("holds on the REST JSON, the binary and a token's last sale, over rounds of shuffled sales and points", async () => {
    const ingest = createClient(IngestService, transportFor("connect", s.server.baseUrl));
    const asset = createClient(AssetService, transportFor("grpc", s.server.baseUrl));
    const collection = createClient(CollectionService, transportFor("connect", s.server.baseUrl));
    const points = new Map<number, string>();
    const sales: SaleLine[] = [];
    // Some sale is flagged (a price its neighbours did not follow), so the default stats differ from includeWash's.
    let washSeen = false;
    // Rounds far apart in time: each round's points are the only ones within a day of its sales.
    const start = Math.floor(Date.now() / 1000 / 60) * 60 - 40 * DAY;
    for (let round = 0; round < 4; round++) {
      const rnd = new Random(53 + round);
      const contractAddress = `0x${(0xd100 + round).toString(16).padStart(40, "0")}`;
      const from = start + round * 8 * DAY;
      const roundSales: SaleLine[] = Array.from({ length: 30 }, (_, i) => {
        const price = BigInt(rnd.int(1, 50_000)) * 10n ** 14n + BigInt(rnd.int(0, 999));
        // Half of them tell their fees (a fortieth to the marketplace, a twentieth in royalty), the others not.
        const fees = i % 2 === 0 ? { marketplaceFee: String(price / 40n), royaltyFee: String(price / 20n) } : {};
        const received = price - BigInt(fees.marketplaceFee ?? 0) - BigInt(fees.royaltyFee ?? 0);
        return {
          hash: `0x${(round * 1000 + i).toString(16).padStart(64, "0")}`, assetId: String(i), contractAddress,
          timestamp: from + rnd.int(0, 3 * DAY), price: String(price), amountReceived: String(received), currency: rnd.pick(CURRENCIES),
          marketplace: MARKETPLACES[i % MARKETPLACES.length]!, ...fees,
        };
      });
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
          await post("sales", b.records.map((x) => ({ ...x, from: ALICE, to: BOB, block: 100 })));
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
        const rest = (await restGet(s.server.baseUrl, "/v1/asset/sales", { contractAddress: c, limit: "50" }, s.read)).body.data as
          { hash: string; assetId: string; priceUsd: string; washFlags: string[] }[];
        expect(rest).toHaveLength(mine.length);
        expect(new Map(rest.map((x) => [`${x.hash}:${x.assetId}`, x.priceUsd]))).toEqual(want);
        const rpc = await asset.listSales({ contractAddress: c, limit: 50 }, { headers: { "x-api-key": s.read } });
        expect(new Map(rpc.data.map((x) => [`${x.hash}:${x.assetId}`, x.priceUsd]))).toEqual(want);
        // currency=usd: every amount of a sale at its point, over REST (converted from the rows, not the kept answers) and the RPC; a page
        // boundary on the way (its cursor is the same query's).
        const wantUsd = new Map(mine.map((x) => [`${x.hash}:${x.assetId}`, expectedInUsd(x, points)]));
        const first = (await restGet(s.server.baseUrl, "/v1/asset/sales", { contractAddress: c, limit: "20", currency: "usd" }, s.read)).body as { data: UsdAmounts[]; cursor: string };
        const second = (await restGet(s.server.baseUrl, "/v1/asset/sales", { contractAddress: c, limit: "50", currency: "USD", cursor: first.cursor }, s.read)).body as { data: UsdAmounts[] };
        const restUsd = [...first.data, ...second.data];
        expect(restUsd.map((x) => `${x.hash}:${x.assetId}`)).toEqual(rest.map((x) => `${x.hash}:${x.assetId}`));
        expect(new Map(restUsd.map((x) => [`${x.hash}:${x.assetId}`, inUsd(x)]))).toEqual(wantUsd);
        const rpcUsd = await asset.listSales({ contractAddress: c, limit: 50, currency: "usd" }, { headers: { "x-api-key": s.read } });
        expect(new Map(rpcUsd.data.map((x) => [`${x.hash}:${x.assetId}`, inUsd(x)]))).toEqual(wantUsd);
        const tokens = (await restGet(s.server.baseUrl, "/v1/asset/tokens", { contractAddress: c, limit: "50" }, s.read)).body.data as { lastSale: { hash: string; assetId: string; priceUsd: string } }[];
        for (const t of tokens) expect(t.lastSale.priceUsd).toBe(want.get(`${t.lastSale.hash}:${t.lastSale.assetId}`));

        // Stats in USD: the whole history, a window, one asset; over REST and the RPC; without the sales a wash rule flags (some prices are
        // far outside their neighbours'), and with them.
        const flagged = new Set(rest.filter((x) => x.washFlags.length > 0).map((x) => `${x.hash}:${x.assetId}`));
        const rnd = new Random(round * 7 + mine.length);
        const times = mine.map((x) => x.timestamp).sort((a, b) => a - b);
        const since = times[rnd.int(0, times.length - 1)]!;
        const until = since + rnd.int(0, 2 * DAY);
        const oneAsset = rnd.pick(mine).assetId;
        washSeen ||= flagged.size > 0;
        const clean = mine.filter((x) => !flagged.has(`${x.hash}:${x.assetId}`));
        for (const [query, which] of [
          [{}, clean],
          [{ includeWash: "true" }, mine],
          [{ since: String(since), until: String(until) }, clean.filter((x) => x.timestamp >= since && x.timestamp <= until)],
          [{ assetId: oneAsset, includeWash: "true" }, mine.filter((x) => x.assetId === oneAsset)],
        ] as const) {
          const want = expectedUsdStats(which, points);
          const rest = (await restGet(s.server.baseUrl, "/v1/collection/stats", { contractAddress: c, currency: "usd", ...query }, s.read)).body.data as UsdStats;
          expect(rest).toEqual({ contractAddress: c, ...want, currency: "USD", groups: want.groups.map((g) => ({ ...g, currency: "USD" })) });
          const window = "since" in query ? { since: BigInt(since), until: BigInt(until) } : {};
          const rpc = await collection.getCollectionStats({ contractAddress: c, currency: "USD", assetId: "assetId" in query ? query.assetId : "", includeWash: "includeWash" in query, ...window },
            { headers: { "x-api-key": s.read } });
          expect([rpc.data?.totalVolume, Number(rpc.data?.unpricedNumSales), rpc.data?.groups.map((g) => [g.marketplace, g.totalVolume, Number(g.unpricedNumSales)])])
            .toEqual([want.totalVolume, want.unpricedNumSales, want.groups.map((g) => [g.marketplace, g.totalVolume, g.unpricedNumSales])]);
        }
        await expectKeptUsd(c, mine, clean, points);
        // Without the parameter, api.md's answer: its fields, in wei, no more.
        const plain = (await restGet(s.server.baseUrl, "/v1/collection/stats", { contractAddress: c }, s.read)).body.data as Record<string, unknown>;
        expect(Object.keys(plain)).toEqual(["contractAddress", "totalNumSales", "totalVolume", "currency", "groups"]);
        expect(plain.totalVolume).toBe(clean.reduce((v, x) => v + BigInt(x.price), 0n).toString());
      }
    }
    // A point sent again after the reads reprices them at once: the answers the server remembered (its response cache) are forgotten.
    const priced = sales.find((x) => expectedUsd(x, points) !== "")!;
    const [minute] = [...points.keys()].filter((m) => m <= priced.timestamp && m > priced.timestamp - DAY).sort((a, b) => b - a);
    await post("prices", [{ currency: "ETH", minute, usd: "12345.678" }]);
    points.set(minute!, "12345.678");
    const again = (await restGet(s.server.baseUrl, "/v1/asset/sales", { contractAddress: priced.contractAddress, limit: "50" }, s.read)).body.data as { hash: string; assetId: string; priceUsd: string }[];
    expect(again.find((x) => x.hash === priced.hash && x.assetId === priced.assetId)?.priceUsd).toBe(expectedUsd(priced, points));
    // The kept dollars moved with it.
    const againFlagged = new Set(again.filter((x) => (x as unknown as { washFlags: string[] }).washFlags.length > 0).map((x) => `${x.hash}:${x.assetId}`));
    const itsSales = sales.filter((x) => x.contractAddress === priced.contractAddress);
    await expectKeptUsd(priced.contractAddress, itsSales, itsSales.filter((x) => !againFlagged.has(`${x.hash}:${x.assetId}`)), points);
    // Both kinds of answer occur: sales with a point in force and sales with none.
    const all = sales.map((x) => expectedUsd(x, points));
    expect(all.some((x) => x === "") && all.some((x) => x !== "")).toBe(true);
    expect(washSeen).toBe(true);
  });
});
