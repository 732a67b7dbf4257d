import { describe, expect, it } from "vitest";
import { handlerFor } from "../../src/domain/kinds/index.js";
import type { Problem } from "../../src/domain/kinds/fields.js";
import fc from "fast-check";
import { compareSales, OTHER_UNIT, tokenWashMasks, WASH_WINDOW_SECONDS, washFlagsOf, washNames, washScore, type WashSale } from "../../src/domain/wash.js";

// The wash rules of docs/wash-trades.md, one example each way: what hits a
// rule and what just misses it.

const DAY = 86_400;
const [A, B, C, D] = ["a", "b", "c", "d"];
let n = 0;
const sale = (seller: string, buyer: string, day: number, over: Partial<WashSale<number>> = {}): WashSale<number> => ({
  id: n++, assetId: "1", seller, buyer, timestamp: 1_700_000_000 + day * DAY, block: 100 + day, hash: (n + 100).toString(16), price: 1000n, ...over,
});
const flags = (sales: WashSale<number>[]) => {
  const masks = washFlagsOf(sales);
  return sales.map((s) => washNames(masks.get(s.id)!));
};

describe("wash rules", () => {
  it("self_trade: the buyer is the seller", () => {
    expect(flags([sale(A, A, 0), sale(A, B, 1)])).toEqual([["self_trade"], []]);
  });

  it("back_and_forth: the same token between the same wallets both ways within 30 days, both legs; not after 30 days, not another token", () => {
    expect(flags([sale(A, B, 0), sale(B, A, 30)])).toEqual([["back_and_forth"], ["back_and_forth"]]);
    expect(flags([sale(A, B, 0), sale(B, A, 31)])).toEqual([[], []]);
    expect(flags([sale(A, B, 0), sale(B, A, 1, { assetId: "2" })])).toEqual([[], []]);
  });

  it("closed_loop: the token back with a wallet that sold it through 3 or more sales within 30 days, every sale of the loop", () => {
    expect(flags([sale(D, A, -40), sale(A, B, 0), sale(B, C, 10), sale(C, A, 20), sale(A, D, 45)])).toEqual([[], ["closed_loop"], ["closed_loop"], ["closed_loop"], []]);
    expect(flags([sale(A, B, 0), sale(B, C, 10), sale(C, A, 31)])).toEqual([[], [], []]);
  });

  it("price_outlier: over 10 times or under a tenth of its 20 nearest sales' median; not a price the market followed, not with under 10 neighbours", () => {
    const market = (price: (i: number) => bigint, count = 21) => Array.from({ length: count }, (_, i) => sale(`w${i}`, `x${i}`, i, { assetId: String(i), price: price(i) }));
    const spike = market((i) => (i === 10 ? 10_001n : 1000n));
    expect(flags(spike)[10]).toEqual(["price_outlier"]);
    expect(flags(market((i) => (i === 10 ? 10_000n : 1000n)))[10]).toEqual([]);
    expect(flags(market((i) => (i === 10 ? 99n : 1000n)))[10]).toEqual(["price_outlier"]);
    // The market follows the price from the spike on: the median of its neighbours moves with it.
    expect(flags(market((i) => (i >= 10 ? 20_000n : 1000n)))[10]).toEqual([]);
    expect(flags(market((i) => (i === 5 ? 50_000n : 1000n), 10))[5]).toEqual([]);
  });

  it("a sale paid in another unit (USDC) is marked OTHER_UNIT, no outlier and no neighbour of one; the token rules judge it; no answer shows the mark", () => {
    const market = (over: (i: number) => Partial<WashSale<number>>) => Array.from({ length: 21 }, (_, i) => sale(`w${i}`, `x${i}`, i, { assetId: String(i), ...over(i) }));
    // 5,000 USDC (6 decimals) among sales of 1,000 wei: counted in wei, a tenth of them; no outlier.
    const usdc = market((i) => (i === 10 ? { price: 5_000_000_000n, otherUnit: true } : {}));
    const masks = washFlagsOf(usdc);
    expect(masks.get(usdc[10]!.id)).toBe(OTHER_UNIT);
    expect(flags(usdc)[10]).toEqual([]);
    expect(washScore(OTHER_UNIT)).toBe(0);
    // Nor a neighbour: ten sales of 1 USDC around a spike leave it ten sales in wei, and their median; in wei, those
    // ten would make the median theirs.
    const around = (otherUnit: boolean) => market((i) => (i === 10 ? { price: 10_001n } : i % 2 === 1 ? { price: 1_000_000n, otherUnit } : {}));
    expect(flags(around(true))[10]).toEqual(["price_outlier"]);
    expect(flags(around(false))[10]).toEqual([]);
    // A self trade paid in USDC is one.
    const self = [sale(A, A, 0, { otherUnit: true })];
    expect(washFlagsOf(self).get(self[0]!.id)).toBe(OTHER_UNIT | 1);
    expect(flags(self)).toEqual([["self_trade"]]);
  });

  it("price_outlier counts what the documented medians say, on random markets (the medians sorted here)", () => {
    const big = (x: bigint, y: bigint) => (x < y ? -1 : x > y ? 1 : 0);
    for (let run = 0; run < 300; run++) {
      const count = 1 + Math.floor(Math.random() * 40);
      const prices = Array.from({ length: count }, () => BigInt(Math.floor(10 ** (Math.random() * 6))));
      const sales = prices.map((price, i) => sale(`w${i}`, `x${i}`, i, { assetId: String(i), price }));
      const masks = washFlagsOf(sales);
      sales.forEach((s, i) => {
        const near = [...prices.slice(Math.max(0, i - 10), i), ...prices.slice(i + 1, i + 11)].sort(big);
        const expected = near.length >= 10 && (s.price > near[near.length >> 1]! * 10n || s.price * 10n < near[(near.length - 1) >> 1]!);
        expect(masks.get(s.id) === 8, `${prices.join(",")} at ${i}`).toBe(expected);
      });
    }
  });

  it("the token rules equal the documented pairs, every pair of the window compared, on random tokens (tokenWashMasks looks them up in one pass)", () => {
    // The rules as docs/wash-trades.md states them: i before j within 30 days, j's buyer i's seller; a back-and-forth when j's seller is
    // i's buyer (both legs), a loop when a sale lies between them (every sale from i to j).
    const reference = (sales: readonly WashSale[]) => {
      const masks = sales.map((s) => (s.seller === s.buyer ? 1 : 0));
      for (let i = 0; i < sales.length; i++) {
        for (let j = i + 1; j < sales.length && sales[j]!.timestamp - sales[i]!.timestamp <= WASH_WINDOW_SECONDS; j++) {
          if (sales[j]!.buyer !== sales[i]!.seller) continue;
          if (sales[j]!.seller === sales[i]!.buyer) masks[i]! |= 2, masks[j]! |= 2;
          if (j - i >= 2) for (let k = i; k <= j; k++) masks[k]! |= 4;
        }
      }
      return masks;
    };
    const leg = fc.record({ seller: fc.constantFrom(A, B, C, D), buyer: fc.constantFrom(A, B, C, D), day: fc.oneof(fc.integer({ min: 0, max: 100 }), fc.constantFrom(0, 30, 60)) });
    fc.assert(
      fc.property(fc.array(leg, { maxLength: 60 }), (legs) => {
        const sales = legs.map((l) => sale(l.seller, l.buyer, l.day)).sort(compareSales);
        expect(tokenWashMasks(sales)).toEqual(reference(sales));
      }),
      { numRuns: 2_000 },
    );
  });

  it("scores 1 - Π(1 - weight) over the rules hit, to 2 decimals", () => {
    expect([0, 1, 2, 4, 8, 6, 15].map(washScore)).toEqual([0, 1, 0.8, 0.7, 0.5, 0.94, 1]);
  });

  it("a sale sent back as it was read keeps its wash fields out of the record; other values are refused by name", () => {
    const { check } = handlerFor("sales", { latestTime: 2_000_000_000 });
    const record = {
      hash: `0x${"ab".repeat(32)}`, from: `0x${"1".repeat(40)}`, to: `0x${"2".repeat(40)}`, contractAddress: `0x${"3".repeat(40)}`, assetId: "7",
      timestamp: 1_700_000_000, block: 1, price: "10", amountReceived: "9", currency: "ETH", marketplace: "OPENSEA",
    };
    const problems: Problem[] = [];
    const checked = check({ ...record, washFlags: ["back_and_forth"], washScore: 0.8 }, problems) as Record<string, unknown>;
    expect(problems).toEqual([]);
    expect(checked.washFlags).toBeUndefined();
    expect(checked.washScore).toBeUndefined();
    const refused: Problem[] = [];
    expect(check({ ...record, washFlags: ["sybil"], washScore: 2 }, refused)).toBeUndefined();
    expect(refused.map((p) => p.field)).toEqual(["washFlags", "washScore"]);
  });
});
