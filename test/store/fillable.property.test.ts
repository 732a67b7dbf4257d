import fc from "fast-check";
import { afterAll, beforeAll, describe, it } from "vitest";
import { skipPg } from "../support/pg.js";
import { importHistory, type Harness, harness } from "../support/property-store.js";
import { expectListingAnswers } from "../support/listing-answers.js";
import { C, recordOf, setRunPrefix, truthOf, ts, type Write, writeArb } from "../support/listing-model.js";

// Listings that can no longer be filled are not active (decisions.md,
// "Fillable listings"): after any history of listing records, sales and
// transfers, in any arrival order and with records sent again changed, a
// listing whose token changed hands after it was created (the first sale or
// transfer of its token after its createdAt) answers CANCELLED from that
// moment, the status filter and the floor (now and at= any time) follow,
// and the rest answer what their records said. Checked on both engines
// against an oracle over the raw records.
//
// Listings as orders (decisions.md, "Listings as orders"): a listing whose
// maker did not own its token when it was created (by the ownership rule
// over the events at or before that second), and any listing of a token
// burned by then, is CANCELLED from its creation; one past its expiresAt (every expiry here is in the clock's
// past) is EXPIRED from then unless a move ended it first, and no floor
// holds it from its expiry on.

const SALE_THEN_ITS_LATER_TRANSFER: Write[] = [
  { kind: "sales", hash: 2, asset: 0, at: 0 },
  { kind: "listings", id: 0, asset: 0, created: 1, updated: 0, price: 1, status: "CREATED", maker: 3, expires: 0 },
  { kind: "transfers", hash: 2, asset: 0, at: 2 },
];

for (const engine of ["sqlite", "postgres"] as const) {
  describe.skipIf(engine === "postgres" && skipPg)(`listings that can no longer be filled on ${engine} (property)`, () => {
    let h: Harness;
    let run = 0;

    beforeAll(async () => {
      h = await harness(engine);
    });
    afterAll(async () => {
      await h?.cleanup();
    });

    it("answers, the status filter and the floor (now and at any time) follow each listing's token's first move after its creation", async () => {
      await fc.assert(
        fc.asyncProperty(fc.array(writeArb, { minLength: 1, maxLength: 20 }), fc.boolean(), async (writes, bulk) => {
          const address = C(++run);
          setRunPrefix(String(run));
          const taken = await importHistory(h.store, writes, (w) => recordOf(address, w), bulk);
          if ((await h.read.collections.collectionId(address)) === undefined) return;
          await expectListingAnswers(h, address, truthOf(taken), taken, [...Array.from({ length: 18 }, (_, i) => ts(i) - 5), ...Array.from({ length: 18 }, (_, i) => ts(i))]);
        }),
        // Always checked besides the random runs: a sale, a listing its maker made after it, then the sale's transaction's transfer,
        // a later one (the sale's buyer no longer owned the token at the listing's creation: the listing is judged again).
        { numRuns: engine === "sqlite" ? 150 : 60, examples: [[SALE_THEN_ITS_LATER_TRANSFER, false], [SALE_THEN_ITS_LATER_TRANSFER, true]] },
      );
    }, 300_000);
  });
}
