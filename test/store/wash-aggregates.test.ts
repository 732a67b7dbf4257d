import { describe, expect, it } from "vitest";
import { skipPg } from "../support/pg.js";
import { importBatch, useHarness } from "../support/property-store.js";

// A sale stored in an earlier commit and flagged by a later one (the second
// leg of a back-and-forth) leaves the kept aggregates, and enters them again
// when that leg is taken back (a reorganisation), exactly: the stats and the
// series answer the clean sales, and what was kept equals a rebuild from the
// raw sales. A sale that is none of its intervals' lowest, highest, first or
// last leaves by its delta, the intervals not summed again (SQLite:
// sqlite/sales-series.ts leave; PostgreSQL: postgres/sales-series.ts, its
// leaving marks); one that is an edge has them summed again. Their US
// dollars (price points written after the sales they price) leave and
// enter with them, and a rebuild finds nothing to change.

const HOUR = 3_600;
const DAY = 86_400;
const T0 = 1_750_003_200; // an hour's start
const wallet = (c: string) => `0x${c.repeat(40)}`;
const E15 = 10n ** 15n;

for (const engine of ["sqlite", "postgres"] as const) {
  describe.skipIf(engine === "postgres" && skipPg)(`a stored sale flagged later leaves the aggregates, exactly, on ${engine}`, () => {
    const harnessed = useHarness(engine);
    let run = 0;

    // The morning's sales: tokens 1 to 5 at 100 to 500 (×10^15), ten minutes apart, between wallets that trade nothing back.
    const morning = (address: string) =>
      [1, 2, 3, 4, 5].map((i) => ({
        hash: `0x${(0xb00 + i).toString(16).padStart(64, "0")}`, from: wallet(String(i)), to: wallet("abcdef"[i]!), contractAddress: address,
        assetId: String(i), timestamp: T0 + i * 600, block: 1_000 + i, price: (BigInt(i * 100) * E15).toString(), amountReceived: "0", currency: "ETH", marketplace: "OPENSEA",
      }));

    for (const [what, token] of [["a sale inside its intervals (its delta)", 3], ["an interval's lowest and first sale (summed again)", 1]] as const) {
      it(`${what}: out when its token is sold back, in again when that sale is taken back`, { timeout: 60_000 }, async () => {
        const h = harnessed();
        const address = `0x${(0xf5000 + ++run).toString(16).padStart(40, "0")}`;
        const sales = morning(address);
        await importBatch(h.store, "collections", [{ contractAddress: address, name: "back and forth" }]);
        await importBatch(h.store, "sales", sales);
        // Price points after the sales they price: tokens 1 and 2 at the first, 3 to 5 at the second (their dollars move: repriced).
        await importBatch(h.store, "prices", [{ currency: "ETH", minute: T0, usd: "2000.5" }, { currency: "ETH", minute: T0 + 1800, usd: "1999.25" }]);
        const usdOf = (s: (typeof sales)[number]) => BigInt(s.price) * (s.timestamp >= T0 + 1800 ? 199_925n : 200_050n);
        const leg = sales[token - 1]!;
        const answers = async () => {
          const stats = await h.client.getCollectionStats({ contractAddress: address });
          const series = await Promise.all((["hour", "day"] as const).map(async (interval) =>
            (await h.client.getCollectionStatsSeries({ contractAddress: address, interval, since: BigInt(T0), until: BigInt(T0 + HOUR - 1) })).data.map((b) =>
              [Number(b.totalNumSales), b.totalVolume, b.minPrice, b.maxPrice, b.firstPrice, b.lastPrice])));
          const usd = await Promise.all((["hour", "day"] as const).map(async (interval) =>
            (await h.client.getCollectionStatsSeries({ contractAddress: address, interval, since: BigInt(T0), until: BigInt(T0 + HOUR - 1), currency: "usd" })).data.map((b) =>
              [Number(b.totalNumSales), b.totalVolume, Number(b.unpricedNumSales)])));
          return { n: Number(stats.data!.totalNumSales), volume: stats.data!.totalVolume, series, usd };
        };
        const of = (kept: typeof sales) => {
          const prices = kept.map((s) => BigInt(s.price));
          const sum = prices.reduce((a, b) => a + b, 0n).toString();
          const bucket = [kept.length, sum, prices.reduce((a, b) => (b < a ? b : a)).toString(), prices.reduce((a, b) => (b > a ? b : a)).toString(), kept[0]!.price, kept.at(-1)!.price];
          // Dollars to the cent of hundredths of a dollar times wei: exact, then half up.
          const cents = (kept.reduce((a, s) => a + usdOf(s), 0n) + 5n * 10n ** 17n) / 10n ** 18n;
          const dollars = `${cents / 100n}.${String(cents % 100n).padStart(2, "0")}`;
          return { n: kept.length, volume: sum, series: [[bucket], [bucket]], usd: [[[kept.length, dollars, 0]], [[kept.length, dollars, 0]]] };
        };
        expect(await answers()).toEqual(of(sales));

        // The token sold back the next day, at the same price: both legs are a back-and-forth.
        const back = { ...leg, hash: `0x${"c1".repeat(32)}`, from: leg.to, to: leg.from, timestamp: T0 + DAY, block: 2_000 };
        await importBatch(h.store, "sales", [back]);
        const flags = (await h.assets.listSales({ contractAddress: address, limit: 10 })).data.map((s) => [s.assetId, s.washFlags.join()]);
        expect(flags.filter(([, f]) => f !== "").sort()).toEqual([[String(token), "back_and_forth"], [String(token), "back_and_forth"]]);
        expect(await answers()).toEqual(of(sales.filter((s) => s !== leg)));
        expect((await h.store.rebuildStats(undefined, true)).changed).toBe(0);

        // The second leg taken back: the first is clean again.
        await importBatch(h.store, "reorgs", [{ chain: "ethereum", fromBlock: 2_000 }]);
        expect(await answers()).toEqual(of(sales));
        expect((await h.store.rebuildStats(undefined, true)).changed).toBe(0);
      });
    }
  });
}
