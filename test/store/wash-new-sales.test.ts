import { describe, expect, it } from "vitest";
import { washFlagsOf, washNames } from "../../src/domain/wash.js";
import { skipPg } from "../support/pg.js";
import { importBatch, useHarness } from "../support/property-store.js";

// A token whose marks in a commit are all new sales is not read: two
// questions of the asset index answer whether its new sales are alone
// (shared/wash-scope.ts newSalesAlone): no sale held before lies at or after
// the first of them, and none in a new sale's 30 days before was sold by its
// buyer. Each case below needs one of the two answers to be "no": the new
// sale completes a pair with a sale held before, and both are flagged in its
// commit. (The property test, wash.property, finds these too, but a later
// write can evaluate the token again and hide a wrong answer; here the
// commit that needs the answer is the last.)

const DAY = 86_400;
const T0 = 1_750_003_200;
const wallet = (c: string) => `0x${c.repeat(40)}`;

interface Leg {
  day: number;
  from: string;
  to: string;
  asset?: string;
}

for (const engine of ["sqlite", "postgres"] as const) {
  describe.skipIf(engine === "postgres" && skipPg)(`a commit of new sales only is evaluated with the sales held before, on ${engine}`, () => {
    const harnessed = useHarness(engine);
    let run = 0;

    const cases: { what: string; held: Leg[]; added: Leg[]; heldFlagged?: true }[] = [
      { what: "the second leg of a back-and-forth, at the live edge (its buyer sold the token before it)", held: [{ day: 0, from: "a", to: "b" }], added: [{ day: 5, from: "b", to: "a" }], heldFlagged: true },
      { what: "the sale closing a loop, at the live edge", held: [{ day: 0, from: "a", to: "b" }, { day: 3, from: "b", to: "c" }], added: [{ day: 6, from: "c", to: "a" }], heldFlagged: true },
      // Nothing in the window before the new sale was sold by its buyer (c): only the held sale after it tells.
      { what: "a sale arriving late, between two held sales that it makes a loop of", held: [{ day: 0, from: "a", to: "b" }, { day: 20, from: "c", to: "a" }], added: [{ day: 10, from: "b", to: "c" }], heldFlagged: true },
      { what: "a sale arriving late, before a held sale that sells it back", held: [{ day: 10, from: "b", to: "a" }], added: [{ day: 4, from: "a", to: "b" }], heldFlagged: true },
      { what: "two new sales of one commit, a back-and-forth between them", held: [{ day: 0, from: "c", to: "a" }], added: [{ day: 40, from: "a", to: "b" }, { day: 41, from: "b", to: "a" }] },
      {
        what: "a self trade, a new sale alone, and a held back-and-forth that stays flagged",
        held: [{ day: 0, from: "a", to: "b" }, { day: 1, from: "b", to: "a" }, { day: 0, from: "a", to: "b", asset: "2" }],
        added: [{ day: 45, from: "c", to: "d" }, { day: 46, from: "e", to: "e", asset: "2" }],
        heldFlagged: true,
      },
    ];

    for (const { what, held, added, heldFlagged } of cases) {
      it(what, async () => {
        const h = harnessed();
        const address = `0x${(0xf7000 + ++run).toString(16).padStart(40, "0")}`;
        let n = 0;
        const sale = (l: Leg) => ({
          hash: `0x${(0xa00 + ++n).toString(16).padStart(64, "0")}`, from: wallet(l.from), to: wallet(l.to), contractAddress: address,
          assetId: l.asset ?? "1", timestamp: T0 + l.day * DAY, block: 1_000 + l.day * 10 + n, price: "1000000000000000000", amountReceived: "0",
          currency: "ETH", marketplace: "OPENSEA",
        });
        const before = held.map(sale);
        const after = added.map(sale);
        await importBatch(h.store, "collections", [{ contractAddress: address, name: "new sales" }]);
        await importBatch(h.store, "sales", before);
        await importBatch(h.store, "sales", after);
        const all = [...before, ...after];
        const oracle = washFlagsOf(all.map((s) => ({ ...s, id: s.hash, seller: s.from, buyer: s.to, price: BigInt(s.price) })));
        const expected = all.map((s) => [s.hash, washNames(oracle.get(s.hash)!).join()]).sort();
        const got = (await h.assets.listSales({ contractAddress: address, limit: 50 })).data.map((s) => [s.hash, s.washFlags.join()]).sort();
        expect(got).toEqual(expected);
        // A held sale is flagged where the case says (the first four: by the new sales' commit), and a new one in every case.
        expect(expected.some(([hash, f]) => f !== "" && before.some((s) => s.hash === hash))).toBe(heldFlagged === true);
        expect(expected.some(([hash, f]) => f !== "" && after.some((s) => s.hash === hash))).toBe(true);
        expect((await h.store.rebuildStats(undefined, true)).changed).toBe(0);
      });
    }

    it("a new sale's outlier neighbours are the sales in wei before it, past any in another unit (the run's bound counts those in wei)", async () => {
      const h = harnessed();
      const address = `0x${(0xf7000 + ++run).toString(16).padStart(40, "0")}`;
      let n = 0;
      const sale = (day: number, price: string, currency = "ETH") => ({
        hash: `0x${(0xb00 + ++n).toString(16).padStart(64, "0")}`, from: wallet(String(n % 10)), to: wallet(String((n + 3) % 10)), contractAddress: address,
        assetId: String(n), timestamp: T0 + day * DAY, block: 1_000 + day, price, amountReceived: "0", currency, marketplace: "OPENSEA",
      });
      // 20 sales in wei, then 15 in USDC: the 21st sale before the spike by time is the sixth in wei from the end.
      const held = [...Array.from({ length: 20 }, (_, i) => sale(i, "1000")), ...Array.from({ length: 15 }, (_, i) => sale(20 + i, "1", "USDC"))];
      const spike = sale(40, "10001");
      await importBatch(h.store, "collections", [{ contractAddress: address, name: "other units" }]);
      await importBatch(h.store, "sales", held);
      await importBatch(h.store, "sales", [spike]);
      const got = (await h.assets.listSales({ contractAddress: address, limit: 1 })).data.map((s) => [s.hash, s.washFlags]);
      expect(got).toEqual([[spike.hash, ["price_outlier"]]]);
    });
  });
}
