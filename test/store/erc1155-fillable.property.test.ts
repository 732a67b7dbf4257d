import fc from "fast-check";
import { describe, it } from "vitest";
import { skipPg } from "../support/pg.js";
import { importBatch, importHistory, useHarness } from "../support/property-store.js";
import { expectListingAnswers } from "../support/listing-answers.js";
import { C, recordOf, setRunPrefix, ts } from "../support/listing-model.js";
import { type UnitWrite, unitTransferRecord, unitTruthOf, unitWriteArb } from "../support/erc1155-listing-model.js";

// An ERC-1155 listing is fillable while its maker holds its quantity
// (decisions.md, "ERC-1155"): after any history of listing records (some
// units each, by a maker or none), transfers of units between the makers
// and the zero address, and sales (which move no units), in any arrival
// order and with records sent again changed, a listing ends at its
// creation when its maker's balance after the last transfer at or before it
// was below its quantity, else at the first later transfer that takes the
// balance below it; the answers, the status filter and the floor (now and
// at any time) follow. Checked on both engines against an oracle over the
// raw records (test/support/erc1155-listing-model.ts).

const MINTED_LISTED_SENT: UnitWrite[] = [
  { kind: "transfers", hash: 1, asset: 0, at: 1, from: 0, to: 1, amount: 2 },
  { kind: "listings", id: 0, asset: 0, created: 2, updated: 0, price: 1, status: "CREATED", maker: 1, expires: 0, quantity: 2 },
  { kind: "transfers", hash: 2, asset: 0, at: 5, from: 1, to: 2, amount: 1 },
];
const LISTED_THEN_SENT: UnitWrite[] = [
  { kind: "listings", id: 0, asset: 0, created: 0, updated: 0, price: 1, status: "CREATED", maker: 2, expires: 0, quantity: 1 },
  { kind: "transfers", hash: 1, asset: 0, at: 1, from: 2, to: 0, amount: 1 },
];

for (const engine of ["sqlite", "postgres"] as const) {
  describe.skipIf(engine === "postgres" && skipPg)(`ERC-1155 listings by their makers' balances on ${engine} (property)`, () => {
    const harnessOf = useHarness(engine);
    let run = 0;

    it("answers, the status filter and the floor follow each maker's balance against its listing's quantity", async () => {
      await fc.assert(
        fc.asyncProperty(fc.array(unitWriteArb, { minLength: 1, maxLength: 20 }), fc.boolean(), async (writes, bulk) => {
          const h = harnessOf();
          const address = C(5000 + ++run);
          setRunPrefix(String(run));
          await importBatch(h.store, "collections", [{ contractAddress: address, name: "Editions", tokenStandard: "ERC1155" }]);
          const record = (w: UnitWrite) => (w.kind === "transfers" ? unitTransferRecord(address, w) : recordOf(address, w));
          const taken = await importHistory(h.store, writes, record, bulk);
          await expectListingAnswers(h, address, unitTruthOf(taken), taken, Array.from({ length: 14 }, (_, i) => ts(i)));
        }),
        // Always checked besides the random runs: a maker's units minted, listed, then sent on; and a listing before any known
        // transfer of its maker's, whose first sends the running sum below its quantity.
        { numRuns: engine === "sqlite" ? 150 : 60, examples: [false, true].flatMap((bulk) => [[MINTED_LISTED_SENT, bulk], [LISTED_THEN_SENT, bulk]] as [UnitWrite[], boolean][]) },
      );
    }, 300_000);
  });
}
