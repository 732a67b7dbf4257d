import { describe, expect, it } from "vitest";
import { Random } from "../../src/demo/random.js";
import { handlerFor } from "../../src/domain/kinds/index.js";
import { migrateStore, openIngestWriter, openWritableStore } from "../../src/store/open.js";
import { COLLECTION } from "../support/fixture.js";
import { storeEngines } from "../support/store-engines.js";
import { washFlagsOf, type WashSale } from "../../src/domain/wash.js";

// The background derive's read of new sales (DeriveRepository.salesSince):
// the count of the collection's sales up to `until`, by which it sees that
// its history changed, equals the raw count for any instant (inside an
// hour, at its edges, before the first sale, past the last), after sales in
// random hours over four marketplaces, some sent again moved to another
// hour or marketplace; and the rows are exactly those after `after`, in the
// model's order. PostgreSQL counts from the running totals (issue 50: a
// count of the raw sales cost what the collection's history held). Both
// engines.

const engines = storeEngines("derive-sales-since");
const MARKETPLACES = ["OPENSEA", "BLUR", "X2Y2", "LOOKSRARE"];
const START = 1_700_000_000 - (1_700_000_000 % 3600);

describe.each(engines)("salesSince (%s)", (_name, open, skip) => {
  it.skipIf(skip)("counts the sales up to any instant as the raw sales do, and returns those after `after` in order", async () => {
    const store = await open();
    await migrateStore(store.target);
    const writer = openIngestWriter(store.target);
    const rnd = new Random(50);
    const check = handlerFor("sales", { latestTime: Number.MAX_SAFE_INTEGER });
    const sales = new Map<string, WashSale<string>>();
    const sale = (i: number) => {
      const timestamp = START + rnd.int(0, 40 * 3600);
      const r = check.check(
        {
          hash: `0x${i.toString(16).padStart(64, "0")}`, from: `0x${"1".repeat(40)}`, to: `0x${"2".repeat(40)}`, contractAddress: COLLECTION,
          assetId: String(i % 50), timestamp, block: 18_000_000 + i, price: String(rnd.int(1, 1000)), amountReceived: "1", currency: "ETH",
          marketplace: rnd.pick(MARKETPLACES),
        },
        [],
      ) as Record<string, unknown>;
      sales.set(String(i), { id: String(i), assetId: String(i % 50), seller: "1", buyer: "2", timestamp, block: 18_000_000 + i, hash: (r.hash as string).slice(2), price: BigInt(r.price as string) });
      return r;
    };
    const writable = await openWritableStore(store.target);
    try {
      for (let round = 0; round < 4; round++) {
        // New sales, and some earlier ones sent again at another time and marketplace.
        const batch = Array.from({ length: 60 }, (_, k) => sale(round * 60 + k));
        if (round > 0) batch.push(...Array.from({ length: 10 }, () => sale(rnd.int(0, round * 60 - 1))));
        await writer.write("sales", batch);
        const c = (await writable.derive.collectionId(COLLECTION))!;
        const instants = [START - 1, START, START + 3599, START + 3600, START + 41 * 3600, ...Array.from({ length: 12 }, () => START + rnd.int(0, 41 * 3600))];
        for (const until of instants) {
          const after = until - rnd.int(0, 5 * 3600);
          const got = await writable.derive.salesSince(c, after, until);
          // The model's sales are those no wash rule flags (docs/wash-trades.md): here, prices far from their neighbours'.
          const masks = washFlagsOf([...sales.values()]);
          const raw = [...sales.values()].filter((s) => s.timestamp <= until && masks.get(s.id) === 0);
          expect(got.total, `until ${until}`).toBe(raw.length);
          const times = raw.filter((s) => s.timestamp > after).map((s) => s.timestamp).sort((a, b) => a - b);
          expect(got.sales.map((s) => s.timestamp)).toEqual(times);
        }
      }
    } finally {
      await writable.close();
      await writer.close();
      await store.drop();
    }
  });
});
