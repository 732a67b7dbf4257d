import { describe, expect, it } from "vitest";
import { Random } from "../../src/demo/random.js";
import { openReadRepositories } from "../../src/store/open.js";
import { FEW_MATCHES } from "../../src/store/shared/collection-summaries.js";
import { importRecords } from "../support/engine.js";
import { storeEngines } from "../support/store-engines.js";

// The collections list found by a text (issue 50, item 6: at a chain's size
// a rare text read every summary): each engine looks a text of three
// characters or more up in its trigram index of names and addresses and,
// when it names at most FEW_MATCHES collections, sorts those; otherwise
// reads the order's index as before. Either way the page is what the exact
// test (a substring of the lower-cased name, or of the address) selects:
// checked against an oracle for texts that match one collection, a few,
// more than FEW_MATCHES, none, shorter than three characters, names in
// other scripts and cases, and the characters LIKE and FTS5 read as
// syntax (%, _, \, "), paged by 7 through every order. Both engines.

const engines = storeEngines("collections-text");
const N = FEW_MATCHES + 300;
const address = (i: number) => `0x${(0xfeed_0000 + i).toString(16).padStart(40, "0")}`;
const WORDS = ["apes", "Punks", "ÉCOLE", "école", "100%_real", 'say "hi"', "back\\slash", "ape_s"];

describe.each(engines)("collections found by a text (%s)", (_name, open, skip) => {
  it.skipIf(skip)("equal the exact substring test, paged, in every order, whichever way the text is found", async () => {
    const store = await open();
    const rnd = new Random(19);
    const names = Array.from({ length: N }, (_, i) => (i % 500 === 7 ? `Rare ${rnd.pick(WORDS)} ${i}` : `Common ${i}`));
    await importRecords(store.target, "collections", names.map((name, i) => ({ contractAddress: address(i), name })));
    const repos = await openReadRepositories(store.target);
    try {
      const texts = ["rare", "common", "common 1", "apes", "école", "%_", "100%", "_", "\\s", '"hi"', "0x", "feed00", "ed0005", "zzz", "0000000000feed0009"];
      for (const query of texts) {
        const want = names
          .map((name, i) => ({ name, address: address(i) }))
          .filter((c) => c.name.toLowerCase().includes(query) || c.address.includes(query))
          .map((c) => c.address)
          .sort();
        for (const sort of ["volume1d", "floor"] as const) {
          const got: string[] = [];
          let after = null;
          do {
            const { page } = await repos.collectionList.collectionsPage({ sort, query }, { limit: 7, after });
            got.push(...page.rows.map((r) => r.contractAddress));
            after = page.nextKey;
          } while (after !== null && got.length <= N);
          // No sales: every summary ties on its key, and ties go by address.
          expect(got, `${query} by ${sort}`).toEqual(want);
        }
      }
    } finally {
      await repos.close();
      await store.drop();
    }
  }, 120_000);
});
