import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { type FloorBucket, FLOOR_SPANS, type FloorPrice, floorCandles } from "../../src/domain/floor-candles.js";
import {
  type DirtySpan,
  type FloorIo,
  type FloorPoint,
  MANY,
  runSync,
  settleFloors,
} from "../../src/store/shared/floor-history.js";
import { OPEN_END } from "../../src/store/shared/listing-spans.js";

// The floor history's bookkeeping (src/store/shared/floor-history.ts) over an
// engine held in memory: after any sequence of spans added and removed
// (settled in batches, some past MANY), the candles composed from the kept
// points and buckets equal the floor recomputed second by second from the
// spans there, for every length and marketplace.

const T0 = 1_700_000_000 - (1_700_000_000 % 86400) - 3 * 3600;
const MARKETPLACES = ["A", "B"];
/** Of several lengths, so that comparing them as text would go wrong ("9" after "40"). */
const PRICES = ["9", "40", "300", "2000", "7", "1000000000000000000000"];

interface Span {
  listingId: number;
  marketplace: string;
  from: number;
  until: number;
  price: string;
  flagged: boolean;
}

class MemoryFloor implements FloorIo<"sync"> {
  spansHeld: Span[] = [];
  readonly pointsHeld = new Map<string, FloorPoint[]>();
  readonly bucketsHeld = new Map<string, Map<number, FloorBucket>>();

  points(c: number, m: string, from: number, through: number) {
    const all = this.pointsHeld.get(m) ?? [];
    const before = all.filter((p) => p.t < from).at(-1)?.price ?? null;
    return { before, points: all.filter((p) => p.t >= from && p.t <= through) };
  }
  spans(c: number, m: string, from: number, until: number) {
    return this.spansHeld.filter((s) => !s.flagged && (m === "" || s.marketplace === m) && s.from < until && s.until > from);
  }
  present(spans: readonly DirtySpan[]) {
    return spans.map((d) => this.spansHeld.some((s) => !s.flagged && s.listingId === d.listingId && s.from === d.from && s.until === d.until && s.price === d.price));
  }
  writePoints(c: number, m: string, from: number, through: number, points: readonly FloorPoint[]) {
    const kept = (this.pointsHeld.get(m) ?? []).filter((p) => p.t < from || p.t > through);
    this.pointsHeld.set(m, [...kept, ...points].sort((a, b) => a.t - b.t));
  }
  buckets(c: number, m: string, span: number, from: number, until: number) {
    return [...(this.bucketsHeld.get(`${m}/${span}`) ?? new Map<number, FloorBucket>()).values()]
      .filter((b) => b.bucket >= from && b.bucket < until)
      .sort((a, b) => a.bucket - b.bucket);
  }
  writeBuckets(c: number, m: string, span: number, rows: readonly (readonly [number, FloorBucket | null])[]) {
    const held = this.bucketsHeld.get(`${m}/${span}`) ?? new Map<number, FloorBucket>();
    for (const [b, row] of rows) if (row === null) held.delete(b);
    else held.set(b, row);
    this.bucketsHeld.set(`${m}/${span}`, held);
  }
}

/** The floor at each second, recomputed from the spans. */
function floorAt(spans: readonly Span[], m: string, t: number): FloorPrice {
  let out: FloorPrice = null;
  for (const s of spans) if (!s.flagged && (m === "" || s.marketplace === m) && s.from <= t && t < s.until && (out === null || BigInt(s.price) < BigInt(out))) out = s.price;
  return out;
}

const op = fc.oneof(
  { weight: 3, arbitrary: fc.record({ op: fc.constant("add" as const), listing: fc.integer({ min: 0, max: 9 }), m: fc.constantFrom(...MARKETPLACES),
    from: fc.integer({ min: 0, max: 7200 }), length: fc.oneof(fc.integer({ min: 1, max: 4000 }), fc.constant(-1)), price: fc.integer({ min: 1, max: 6 }) }) },
  { weight: 2, arbitrary: fc.record({ op: fc.constant("remove" as const), index: fc.nat() }) },
  { weight: 1, arbitrary: fc.record({ op: fc.constant("flag" as const), listing: fc.integer({ min: 0, max: 9 }), flagged: fc.boolean() }) },
  { weight: 1, arbitrary: fc.record({ op: fc.constant("settle" as const), bulk: fc.boolean() }) },
);

describe("floor history bookkeeping (in memory)", () => {
  it("candles of every length equal the floor recomputed from the spans", () => {
    fc.assert(
      fc.property(fc.array(op, { maxLength: 40 }), (ops) => {
        const io = new MemoryFloor();
        let dirty: DirtySpan[] = [];
        const log = (s: Span, sign: 1 | -1) => dirty.push({ collectionId: 1, marketplace: s.marketplace, listingId: s.listingId, from: s.from, until: s.until, price: s.price, sign });
        const settle = (bulk: boolean) => {
          // A bulk batch: past MANY entries, the range is swept whole (entries repeated as a bulk import's would be).
          if (bulk && dirty.length > 0) while (dirty.length <= MANY) dirty = [...dirty, ...dirty];
          runSync(io, settleFloors(dirty));
          dirty = [];
        };
        for (const o of [...ops, { op: "settle" as const, bulk: false }]) {
          if (o.op === "add") {
            const flagged = io.spansHeld.some((s) => s.listingId === o.listing && s.flagged);
            const s = { listingId: o.listing, marketplace: o.m, from: T0 + o.from, until: o.length === -1 ? OPEN_END : T0 + o.from + o.length, price: PRICES[o.price - 1]!, flagged };
            io.spansHeld.push(s);
            log(s, 1);
          } else if (o.op === "remove") {
            if (io.spansHeld.length === 0) continue;
            const [s] = io.spansHeld.splice(o.index % io.spansHeld.length, 1);
            log(s!, -1);
          } else if (o.op === "flag") {
            for (const s of io.spansHeld) {
              if (s.listingId !== o.listing || s.flagged === o.flagged) continue;
              s.flagged = o.flagged;
              log(s, o.flagged ? -1 : 1);
            }
          } else settle(o.bulk);
        }
        for (const m of ["", ...MARKETPLACES]) {
          for (const length of FLOOR_SPANS) {
            const start = T0 - length - ((T0 - length) % length);
            const count = Math.ceil((4 * 3600 + 2 * length) / length);
            const before = io.points(1, m, start, start).before;
            const candles = floorCandles(start, length, count, before, io.buckets(1, m, length, start, start + count * length));
            const want = Array.from({ length: count }, (_, i) => {
              // The floor changes only where a span starts or ends: its value at each such second of the interval.
              const b = start + i * length;
              const cuts = [b, ...io.spansHeld.flatMap((s) => [s.from, s.until]).filter((t) => t > b && t < b + length)];
              const values = [...new Set(cuts)].sort((x, y) => x - y).map((t) => floorAt(io.spansHeld, m, t));
              const defined = values.filter((v): v is string => v !== null).map(BigInt);
              return {
                open: values[0]!,
                high: defined.length === 0 ? null : defined.reduce((a, b) => (a > b ? a : b)).toString(),
                low: defined.length === 0 ? null : defined.reduce((a, b) => (a < b ? a : b)).toString(),
                close: values.at(-1)!,
              };
            });
            expect(candles, `${m}/${length}`).toEqual(want);
          }
          // Points are kept minimal: no two in a row with one price.
          const points = io.pointsHeld.get(m) ?? [];
          for (let i = 1; i < points.length; i++) expect(points[i]!.price).not.toBe(points[i - 1]!.price);
        }
      }),
      { numRuns: 200 },
    );
  });
});
