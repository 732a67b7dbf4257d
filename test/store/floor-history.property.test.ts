import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { skipPg } from "../support/pg.js";
import { importHistory, type Harness, harness } from "../support/property-store.js";
import { activePrice, C, marketplaceOf, MARKETPLACES, recordOf, setRunPrefix, T, truthOf, ts, type Write, writeArb } from "../support/listing-model.js";

// Floor history kept at write time (decisions.md, "Floor history"), on both
// engines: after any history of listing records (makers, expiries), sales,
// transfers, burns and tokens flagged or cleared, in any arrival order and
// whether SQLite writes row by row or in bulk, every candle's floor (1m, 1h,
// 1d; all marketplaces and each) is its open, high, low and close of the
// floor recomputed second by second from the raw records: the lowest price
// of the listings active then (the fillable listings' oracle), of tokens not
// flagged now.

type FlagWrite = { kind: "flags"; asset: number; flagged: boolean };
type AnyWrite = Write | FlagWrite;

const anyWrite: fc.Arbitrary<AnyWrite> = fc.oneof(
  { weight: 6, arbitrary: writeArb },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant("flags" as const), asset: fc.integer({ min: 0, max: 2 }), flagged: fc.boolean() }) },
);

const recordOfAny = (address: string, w: AnyWrite): object =>
  w.kind === "flags" ? { contractAddress: address, assetId: String(w.asset), isFlagged: w.flagged, reason: w.flagged ? "stolen" : "" } : recordOf(address, w);

/** The window asked: every record's second (ts(0) to ts(20), expiries included) and a minute either side. */
const SINCE = T - 120;
const UNTIL = ts(20) + 120;
const INTERVALS = { "1m": 60, "1h": 3600, "1d": 86400 } as const;

for (const engine of ["sqlite", "postgres"] as const) {
  describe.skipIf(engine === "postgres" && skipPg)(`floor history on ${engine} (property)`, () => {
    let h: Harness;
    let run = 0;

    beforeAll(async () => {
      h = await harness(engine);
      // Both marketplaces known to the store (a candle of one it has no records of is invalid_argument).
      setRunPrefix("9");
      await importHistory(h.store, [0, 1].map((id) => ({ kind: "listings" as const, id, asset: 0, created: 0, updated: 0, price: 1, status: "CANCELLED" as const, maker: 0, expires: 0 })), (w) => recordOf(C(499), w));
    });
    afterAll(async () => {
      await h?.cleanup();
    });

    it("every candle's floor is the open, high, low and close of the floor recomputed from the raw records", async () => {
      await fc.assert(
        fc.asyncProperty(fc.array(anyWrite, { minLength: 1, maxLength: 20 }), fc.boolean(), async (writes, bulk) => {
          const address = C(500 + ++run);
          setRunPrefix(`${run}0`);
          const taken = await importHistory(h.store, writes, (w) => recordOfAny(address, w), bulk);
          const truth = truthOf(taken.filter((w): w is Write => w.kind !== "flags"));
          const flagged = new Map<number, boolean>();
          for (const w of taken) if (w.kind === "flags") flagged.set(w.asset, w.flagged);
          if ((await h.read.collections.collectionId(address)) === undefined) return;
          /** The floor at a second: the lowest active price (of a marketplace, or all), tokens flagged now left out. */
          const floorAt = (m: string, at: number): number | undefined => {
            let out: number | undefined;
            for (const t of truth.listings.values()) {
              if (flagged.get(t.current.asset) === true || (m !== "" && marketplaceOf(t.current.id) !== m)) continue;
              const p = activePrice(truth, t, at);
              if (p !== undefined && (out === undefined || p < out)) out = p;
            }
            return out;
          };
          const wei = (v: number | undefined) => (v === undefined ? "" : String(v));
          for (const m of ["", ...MARKETPLACES]) {
            for (const [interval, length] of Object.entries(INTERVALS)) {
              const res = await h.client.getCollectionCandles({ contractAddress: address, interval, marketplace: m, since: BigInt(SINCE), until: BigInt(UNTIL) });
              const got = res.data.map((c) => ({ start: Number(c.start), open: c.floorOpen, high: c.floorHigh, low: c.floorLow, close: c.floorClose }));
              const want = got.map(({ start }) => {
                // The floor changes only at the records' seconds (multiples of 10 from T): its value at the interval's first second and at each of those in it.
                const seconds = [start, ...Array.from({ length: 40 }, (_, i) => ts(i - 5)).filter((s) => s > start && s < start + length)];
                const values = seconds.map((s) => floorAt(m, s));
                const defined = values.filter((v): v is number => v !== undefined);
                return {
                  start,
                  open: wei(values[0]),
                  high: wei(defined.length === 0 ? undefined : Math.max(...defined)),
                  low: wei(defined.length === 0 ? undefined : Math.min(...defined)),
                  close: wei(values.at(-1)),
                };
              });
              expect(got.length).toBeGreaterThan(0);
              expect(got, `${m || "all"} ${interval}: ${JSON.stringify(taken)}`).toEqual(want);
            }
          }
        }),
        { numRuns: engine === "sqlite" ? 100 : 40 },
      );
    }, 300_000);
  });
}
