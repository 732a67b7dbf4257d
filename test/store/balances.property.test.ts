import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { skipPg } from "../support/pg.js";
import { holdersFrom, holdersOf } from "../support/holders.js";
import { type Harness, importBatch, importChecked, useHarness } from "../support/property-store.js";

// ERC-1155 balances (decisions.md, "ERC-1155"): after any history of
// transfers with amounts — sent again with another amount, sender or
// recipient, taken back (`removed`), in any arrival order, in batches some
// of which are refused whole, on SQLite through its triggers or its bulk
// recompute — each (token, owner)'s balance is the sum of the units
// transferred to it less those transferred from it, by the records the
// store holds. Checked on both engines through what the service answers:
// each token's owners with their balances, and, while the collection's
// record says ERC1155, its holders counted by units (their counts, the
// units held, the distribution). While it says ERC721 (the collection's
// record is sent now and then with either), holders follow each token's
// one owner (test/store/ownership.property.test.ts): they must then agree
// with the tokens list's owners, so a switch either way finds them again.

const T = 1_700_000_000;
const ZERO = `0x${"0".repeat(40)}`;
const wallet = (n: number) => (n === 0 ? ZERO : `0x${n.toString(16).padStart(40, "0")}`);
const hashOf = (n: number) => `0x${n.toString(16).padStart(64, "0")}`;
const ASSETS = [0, 1, 2];

interface TransferWrite {
  kind: "transfers";
  hash: number;
  log: number;
  asset: number;
  from: number; // 0: a mint
  to: number; // 0: a burn
  amount: number;
  block: number;
  removed: boolean;
}
interface StandardWrite {
  kind: "collections";
  standard: "ERC721" | "ERC1155";
}
type Write = TransferWrite | StandardWrite;

// Few keys, wallets and amounts: records are sent again changed, and taken back, often.
const transferArb: fc.Arbitrary<TransferWrite> = fc.record({
  kind: fc.constant("transfers" as const),
  hash: fc.integer({ min: 1, max: 4 }),
  log: fc.integer({ min: 0, max: 2 }),
  asset: fc.constantFrom(...ASSETS),
  from: fc.integer({ min: 0, max: 4 }),
  to: fc.integer({ min: 0, max: 4 }),
  amount: fc.oneof(fc.integer({ min: 1, max: 5 }), fc.constant(Math.floor(Number.MAX_SAFE_INTEGER / 4096))),
  block: fc.integer({ min: 1, max: 4 }),
  removed: fc.integer({ min: 0, max: 9 }).map((n) => n < 2),
});
const writeArb: fc.Arbitrary<Write> = fc.oneof(
  { weight: 6, arbitrary: transferArb },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant("collections" as const), standard: fc.constantFrom("ERC721" as const, "ERC1155" as const) }) },
);

function recordOf(address: string, w: Write): object {
  if (w.kind === "collections") return { contractAddress: address, name: "Editions", tokenStandard: w.standard };
  return {
    hash: hashOf(w.hash), logIndex: w.log, from: wallet(w.from), to: wallet(w.to), contractAddress: address, assetId: String(w.asset),
    // "1" left out now and then: a record without amount moves one unit.
    ...(w.amount === 1 && w.hash % 2 === 0 ? {} : { amount: String(w.amount) }), timestamp: T + w.block, block: w.block,
    ...(w.removed ? { removed: true } : {}),
  };
}

/** The transfers the store holds after `taken`: the last record of each natural key, gone where its last was a removal. */
function held(taken: readonly Write[]): TransferWrite[] {
  const kept = new Map<string, TransferWrite>();
  for (const w of taken) {
    if (w.kind !== "transfers") continue;
    const key = `${w.hash}/${w.log}/${w.asset}`;
    if (w.removed) kept.delete(key);
    else kept.set(key, w);
  }
  return [...kept.values()];
}

/** Each token's balances by owner (addresses; none of 0), from the held transfers. */
function balancesOracle(transfers: readonly TransferWrite[]): Map<number, Map<string, number>> {
  const out = new Map<number, Map<string, number>>();
  const add = (asset: number, who: number, units: number) => {
    if (who === 0) return;
    const of = out.get(asset) ?? new Map<string, number>();
    of.set(wallet(who), (of.get(wallet(who)) ?? 0) + units);
    out.set(asset, of);
  };
  for (const t of transfers) {
    add(t.asset, t.to, t.amount);
    add(t.asset, t.from, -t.amount);
  }
  return out;
}

/** A token's owners as the service answers them, every page of 2 (so that the keyset is crossed). */
async function ownersOf(h: Harness, address: string, asset: number) {
  const owners: { address: string; balance: string }[] = [];
  let cursor = "";
  do {
    const page = await h.assets.listTokenOwners({ contractAddress: address, assetId: String(asset), limit: 2, cursor });
    owners.push(...page.data.map((o) => ({ address: o.address, balance: o.balance })));
    cursor = page.nextPage;
  } while (cursor !== "");
  return owners;
}

async function expectAnswers(h: Harness, address: string, taken: readonly Write[]) {
  const standard = taken.filter((w): w is StandardWrite => w.kind === "collections").at(-1)?.standard ?? "ERC721";
  const context = JSON.stringify(taken);
  if (standard === "ERC1155") {
    const balances = balancesOracle(held(taken));
    const units = new Map<string, number>();
    for (const asset of ASSETS) {
      const positive = [...(balances.get(asset) ?? [])].filter(([, b]) => b > 0);
      for (const [who, b] of positive) units.set(who, (units.get(who) ?? 0) + b);
      // Balance descending, then address.
      const expected = positive.sort(([a, x], [b, y]) => y - x || (a < b ? -1 : 1)).map(([address, b]) => ({ address, balance: String(b) }));
      expect(await ownersOf(h, address, asset), `${context} asset ${asset}`).toEqual(expected);
    }
    expect(await holdersOf(h, address), context).toEqual(holdersFrom(units, [...units.values()].reduce((a, b) => a + b, 0)));
    return;
  }
  // ERC-721: each token's one owner, as the tokens list answers it; holders count them.
  const tokens = (await h.assets.listTokens({ contractAddress: address, limit: 50 })).data;
  const counts = new Map<string, number>();
  for (const t of tokens) {
    if (t.owner !== "") counts.set(t.owner, (counts.get(t.owner) ?? 0) + 1);
    expect(await ownersOf(h, address, Number(t.assetId)), context).toEqual(t.owner === "" ? [] : [{ address: t.owner, balance: "1" }]);
  }
  expect(await holdersOf(h, address), context).toEqual(holdersFrom(counts, tokens.length));
}

for (const engine of ["sqlite", "postgres"] as const) {
  describe.skipIf(engine === "postgres" && skipPg)(`ERC-1155 balances equal the sum of transfers on ${engine} (property)`, () => {
    const h = useHarness(engine);
    let run = 0;
    const nextAddress = () => `0x${(0xe1155000 + ++run).toString(16).padStart(40, "0")}`;

    it("after any history (sent again changed, taken back, refused batches, standard switched), owners and holders follow the held transfers", async () => {
      await fc.assert(
        fc.asyncProperty(fc.array(writeArb, { minLength: 1, maxLength: 24 }), fc.boolean(), fc.boolean(), async (writes, badLast, bulk) => {
          const address = nextAddress();
          // Now and then a batch refused whole: nothing of it may move a balance. bulk: SQLite's set-based recompute after a
          // bulk import; else its triggers, row by row.
          await importChecked(h().store, writes, (w) => recordOf(address, w), badLast, bulk, async (taken) => {
            // The collection is not there yet: a removal alone names none.
            if (taken.some((w) => w.kind === "collections" || !w.removed)) await expectAnswers(h(), address, taken);
          });
        }),
        { numRuns: engine === "sqlite" ? 100 : 40 },
      );
    }, 300_000);

    it("arrival order does not matter: every permutation of one history ends with the same balances", async () => {
      const distinct = fc
        .uniqueArray(transferArb.map((t) => ({ ...t, removed: false })), { minLength: 2, maxLength: 10, selector: (t) => `${t.hash}/${t.log}/${t.asset}` })
        .chain((ws) => fc.tuple(fc.constant(ws), fc.shuffledSubarray(ws, { minLength: ws.length, maxLength: ws.length })));
      await fc.assert(
        fc.asyncProperty(distinct, fc.boolean(), async ([writes, shuffled], standardFirst) => {
          for (const order of [writes, shuffled]) {
            const address = nextAddress();
            const standard: StandardWrite = { kind: "collections", standard: "ERC1155" };
            const history: Write[] = standardFirst ? [standard, ...order] : [...order, standard];
            // One record an import: the triggers row by row, the merges one token at a time.
            for (const w of history) await importBatch(h().store, w.kind, [recordOf(address, w)]);
            await expectAnswers(h(), address, history);
          }
        }),
        { numRuns: engine === "sqlite" ? 40 : 15 },
      );
    }, 300_000);
  });
}
