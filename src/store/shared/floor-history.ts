import { OPEN_END } from "./listing-spans.js";
import { type FloorBucket, type FloorPrice, type FloorSpanLength, FLOOR_SPANS, highest, lowest, weiBelow } from "../../domain/floor-candles.js";

// Floor history kept at write time (docs/decisions.md, "Floor history"), the
// same on both engines: the floor of a collection (of one marketplace, or ""
// for all) as a step function of time, held as its change points
// (floor_points: the floor from `t` until the next point; a null price, no
// listing active), and each minute's, hour's and day's summary of the points
// in it (floor_buckets), from which a page of candles is one seek for the
// floor carried into it and one range of bucket rows, whatever the
// history's length.
//
// What changes the floor is a listing span written or removed (listing_spans,
// whatever wrote it: a listing record, a sale or transfer that moved its
// token, a reorganisation) or a token flagged or cleared (its spans leave or
// enter the floor). Triggers log each as a dirty span (floor_dirty: +1 added,
// -1 removed); before the transaction commits, `settleFloors` brings the
// points and buckets up to date with what was logged:
// - a span added lowers the floor to its price where it is cheaper (it must
//   still be there, and its token unflagged: it may have been removed again);
// - a span removed can only raise the floor where the floor was its price:
//   there, and only there, the floor is found again from the spans that
//   overlap (a sweep), so a listing that was never the floor costs a read of
//   the points over its span, not of the collection's listings;
// - past MANY entries in a collection, the whole range they cover is swept.
// The engines give the reads and writes (FloorIo); this module decides.

/** A change point: the floor from `t` on, until the next point. */
export interface FloorPoint {
  t: number;
  price: FloorPrice;
}

/** A span as floor_dirty logged it. */
export interface DirtySpan {
  collectionId: number;
  marketplace: string;
  listingId: number;
  from: number;
  until: number;
  price: string;
  sign: 1 | -1;
}

/** An active span of a listing (listing_spans), of a token not flagged. */
export interface FloorSpan {
  from: number;
  until: number;
  price: string;
}

/** Past this many logged spans in one collection, the range they cover is swept whole (a bulk import). */
export const MANY = 256;

/** The engine's reads and writes, each for one collection and one marketplace ("" for all). */
export interface FloorIo<R> {
  /** Points with from <= t <= through (through OPEN_END: all after), oldest first, and the floor before `from`. */
  points(c: number, m: string, from: number, through: number): R extends "sync" ? Points : Promise<Points>;
  /** The spans overlapping [from, until) of tokens not flagged (m "": every marketplace's). */
  spans(c: number, m: string, from: number, until: number): R extends "sync" ? FloorSpan[] : Promise<FloorSpan[]>;
  /** Which of the logged spans added are still there, of tokens not flagged. */
  present(spans: readonly DirtySpan[]): R extends "sync" ? boolean[] : Promise<boolean[]>;
  /** Replaces the points with from <= t <= through by `points`. */
  writePoints(c: number, m: string, from: number, through: number, points: readonly FloorPoint[]): R extends "sync" ? void : Promise<void>;
  /** Bucket rows of a length with from <= bucket < until. */
  buckets(c: number, m: string, span: FloorSpanLength, from: number, until: number): R extends "sync" ? FloorBucket[] : Promise<FloorBucket[]>;
  /** Sets (or, null, removes) the bucket rows of a length. */
  writeBuckets(c: number, m: string, span: FloorSpanLength, rows: readonly (readonly [number, FloorBucket | null])[]): R extends "sync" ? void : Promise<void>;
}

export interface Points {
  before: FloorPrice;
  points: FloorPoint[];
}

/** A step of the work `settleFloors` asks of the engine: one of FloorIo's calls. */
export type FloorStep = { [K in keyof FloorIo<"sync">]: { call: K; args: Parameters<FloorIo<"sync">[K]> } }[keyof FloorIo<"sync">];

/** Asks the engine for one call's result (typed by the call). */
function* ask<K extends keyof FloorIo<"sync">>(call: K, ...args: Parameters<FloorIo<"sync">[K]>): Generator<FloorStep, ReturnType<FloorIo<"sync">[K]>, unknown> {
  return (yield { call, args } as FloorStep) as ReturnType<FloorIo<"sync">[K]>;
}

/** Runs the work (settleFloors, rebuildRanges) on a synchronous engine (SQLite, in its transaction). */
export function runSync(io: FloorIo<"sync">, steps: Generator<FloorStep, void, unknown>): void {
  for (let r = steps.next(); !r.done; ) {
    const s = r.value;
    r = steps.next((io[s.call] as (...a: unknown[]) => unknown)(...s.args));
  }
}

/** Runs the work on an asynchronous engine (PostgreSQL, in its transaction). */
export async function runAsync(io: FloorIo<"async">, steps: Generator<FloorStep, void, unknown>): Promise<void> {
  for (let r = steps.next(); !r.done; ) {
    const s = r.value;
    r = steps.next(await (io[s.call] as (...a: unknown[]) => Promise<unknown>)(...s.args));
  }
}

/** A piece of the floor: `price` over [from, until). */
interface Piece {
  from: number;
  until: number;
  price: FloorPrice;
}

/** A range of a collection's marketplace to sweep whole: a collection that logged more than MANY spans, read from the log grouped. */
export interface WholeRange {
  collectionId: number;
  marketplace: string;
  from: number;
  until: number;
}

/**
 * The floor's points and buckets brought up to date with the spans logged
 * (each collection, each of its marketplaces and ""); `whole`: the ranges of
 * the collections that logged more than MANY, swept whole (the engines read
 * the log grouped, so that a bulk import's spans are not all read back).
 */
export function* settleFloors(dirty: readonly DirtySpan[], whole: readonly WholeRange[] = []): Generator<FloorStep, void, unknown> {
  if (whole.length > 0) yield* rebuildRanges(whole);
  if (dirty.length === 0) return;
  const added = dirty.filter((d) => d.sign === 1);
  const still = added.length === 0 ? [] : yield* ask("present", added);
  const kept = new Set(added.filter((_, i) => still[i]));
  const byCollection = new Map<number, DirtySpan[]>();
  for (const d of dirty) {
    if (d.sign === 1 && !kept.has(d)) continue;
    const list = byCollection.get(d.collectionId) ?? [];
    list.push(d);
    byCollection.set(d.collectionId, list);
  }
  for (const [c, spans] of byCollection) {
    const marketplaces = new Set(["", ...spans.map((s) => s.marketplace)]);
    for (const m of [...marketplaces].sort()) yield* settleOne(c, m, m === "" ? spans : spans.filter((s) => s.marketplace === m));
  }
}

/**
 * Every collection's history over the ranges given (each marketplace's
 * spans' extent), found again whole by a sweep (migration 41): points and
 * buckets there are written as if none were kept.
 */
export function* rebuildRanges(ranges: readonly WholeRange[]): Generator<FloorStep, void, unknown> {
  const byCollection = new Map<number, { marketplace: string; from: number; until: number }[]>();
  for (const r of ranges) byCollection.set(r.collectionId, [...(byCollection.get(r.collectionId) ?? []), r]);
  for (const [c, list] of byCollection) {
    yield* settleOne(c, "", [hull(list)], true);
    for (const r of list) yield* settleOne(c, r.marketplace, [r], true);
  }
}

function* settleOne(c: number, m: string, spans: readonly (Omit<DirtySpan, "collectionId" | "marketplace" | "listingId" | "price" | "sign"> & Partial<DirtySpan>)[], sweepAll = spans.length > MANY): Generator<FloorStep, void, unknown> {
  const ranges = sweepAll ? [hull(spans)] : merged(spans);
  const minutes = new Set<number>();
  const written: Written[] = [];
  for (const range of ranges) {
    const old = yield* ask("points", c, m, range.from, range.until);
    for (const p of old.points) minutes.add(p.t - (p.t % 60));
    const afterValue = range.until === OPEN_END ? null : valueAt(old, range.until);
    let pieces = piecesOf(old, range.from, range.until);
    if (sweepAll) {
      pieces = sweep(yield* ask("spans", c, m, range.from, range.until), range.from, range.until);
    } else {
      // Where a removed span was the floor, the floor is found again from what is there now.
      const again: { from: number; until: number }[] = [];
      for (const d of spans) if (d.sign === -1 && overlaps(d, range)) again.push(...equalRanges(pieces, d.from, d.until, d.price!));
      // Many pieces apart (a sale ending listings at the floor at many times): one sweep over them all.
      const apart = merged(again);
      for (const r of apart.length > 8 ? [hull(apart)] : apart) pieces = replaced(pieces, r.from, r.until, sweep(yield* ask("spans", c, m, r.from, r.until), r.from, r.until));
      // What was added and is still there lowers the floor where it is cheaper (harmless where just swept: it was there).
      for (const d of spans) if (d.sign === 1 && overlaps(d, range)) pieces = lowered(pieces, d.from, d.until, d.price!);
    }
    const points = pointsOf(pieces, old.before, range.until, afterValue);
    for (const p of points) minutes.add(p.t - (p.t % 60));
    written.push({ from: range.from, through: range.until, points });
    yield* ask("writePoints", c, m, range.from, range.until, points);
  }
  yield* rebuildBuckets(c, m, minutes, written);
}

/**
 * The bucket rows of the minutes whose points changed, then of their hours
 * and days: each summarized from what the length below holds, read once per
 * cluster of neighbouring buckets (a bulk sweep changes many; a live write
 * a few, near each other or years apart).
 */
function* rebuildBuckets(c: number, m: string, minutes: ReadonlySet<number>, written: readonly Written[]): Generator<FloorStep, void, unknown> {
  let changed = [...minutes].sort((a, b) => a - b);
  let rows: (readonly [number, FloorBucket | null])[] = [];
  // A minute inside a range just written holds the points written; only those across a range's ends are read.
  const across: number[] = [];
  const byMinute = written.map((w) => {
    const held = new Map<number, FloorPoint[]>();
    for (const p of w.points) {
      const minute = p.t - (p.t % 60);
      held.set(minute, [...(held.get(minute) ?? []), p]);
    }
    return { ...w, held };
  });
  for (const minute of changed) {
    const w = byMinute.find((x) => x.from <= minute && minute + 59 <= x.through);
    if (w === undefined) across.push(minute);
    else rows.push([minute, bucketOf(minute, w.held.get(minute) ?? [])]);
  }
  for (const cluster of clusters(across, CLUSTER_GAP[60])) {
    const { points } = yield* ask("points", c, m, cluster[0]!, cluster.at(-1)! + 59);
    for (const [minute, held] of bucketed(cluster, 60, points, (p) => p.t)) rows.push([minute, bucketOf(minute, held)]);
  }
  yield* ask("writeBuckets", c, m, 60, rows);
  for (const [n, span] of FLOOR_SPANS.entries()) {
    if (n === 0) continue;
    const child = FLOOR_SPANS[n - 1]!;
    changed = [...new Set(changed.map((b) => b - (b % span)))];
    rows = [];
    for (const cluster of clusters(changed, CLUSTER_GAP[span])) {
      const children = yield* ask("buckets", c, m, child, cluster[0]!, cluster.at(-1)! + span);
      for (const [bucket, held] of bucketed(cluster, span, children, (b) => b.bucket)) rows.push([bucket, summaryOf(bucket, held)]);
    }
    yield* ask("writeBuckets", c, m, span, rows);
  }
}

/** Each of the sorted bucket starts with the items (sorted by `at`) that fall in it. */
function* bucketed<T>(buckets: readonly number[], span: number, items: readonly T[], at: (item: T) => number): Generator<[number, T[]]> {
  let i = 0;
  for (const bucket of buckets) {
    while (i < items.length && at(items[i]!) < bucket) i++;
    const start = i;
    while (i < items.length && at(items[i]!) < bucket + span) i++;
    yield [bucket, items.slice(start, i)];
  }
}

/** Points written over [from, through]. */
interface Written {
  from: number;
  through: number;
  points: readonly FloorPoint[];
}

/** How far apart two changed buckets of a length may be and still be read in one range (what lies between is read for nothing). */
const CLUSTER_GAP: Record<FloorSpanLength, number> = { 60: 3600, 3600: 86_400, 86400: 30 * 86_400 };

/** Sorted bucket starts in runs whose neighbours are at most `gap` apart. */
function clusters(sorted: readonly number[], gap: number): number[][] {
  const out: number[][] = [];
  for (const b of sorted) {
    const last = out.at(-1);
    if (last !== undefined && b - last.at(-1)! <= gap) last.push(b);
    else out.push([b]);
  }
  return out;
}

/** The summary of a minute's points (null: none). */
export function bucketOf(bucket: number, points: readonly FloorPoint[]): FloorBucket | null {
  if (points.length === 0) return null;
  const prices = points.map((p) => p.price);
  return { bucket, low: lowest(prices), high: highest(prices), firstAt: points[0]!.t, first: points[0]!.price, last: points.at(-1)!.price };
}

/** The summary of an interval from its children's (null: none). */
export function summaryOf(bucket: number, children: readonly FloorBucket[]): FloorBucket | null {
  if (children.length === 0) return null;
  return {
    bucket,
    low: lowest(children.map((b) => b.low)),
    high: highest(children.map((b) => b.high)),
    firstAt: children[0]!.firstAt,
    first: children[0]!.first,
    last: children.at(-1)!.last,
  };
}

const overlaps = (a: { from: number; until: number }, b: { from: number; until: number }) => a.from < b.until && b.from < a.until;

/** The ranges, overlapping or touching ones joined, oldest first. */
export function merged(ranges: readonly { from: number; until: number }[]): { from: number; until: number }[] {
  const sorted = [...ranges].filter((r) => r.from < r.until).sort((a, b) => a.from - b.from);
  const out: { from: number; until: number }[] = [];
  for (const r of sorted) {
    const last = out.at(-1);
    if (last !== undefined && r.from <= last.until) last.until = Math.max(last.until, r.until);
    else out.push({ from: r.from, until: r.until });
  }
  return out;
}

function hull(spans: readonly { from: number; until: number }[]): { from: number; until: number } {
  return { from: Math.min(...spans.map((s) => s.from)), until: Math.max(...spans.map((s) => s.until)) };
}

/** The floor at `t` from points read through it. */
function valueAt(p: Points, t: number): FloorPrice {
  let v = p.before;
  for (const x of p.points) if (x.t <= t) v = x.price;
  return v;
}

/** The floor over [from, until) as pieces, from the points read over it. */
function piecesOf(p: Points, from: number, until: number): Piece[] {
  const out: Piece[] = [];
  let at = from;
  let price = p.before;
  for (const x of p.points) {
    if (x.t >= until) break;
    if (x.t > at) out.push({ from: at, until: x.t, price });
    at = x.t;
    price = x.price;
  }
  out.push({ from: at, until, price });
  return out;
}

/** The parts of [from, until) where the pieces' price is `price`. */
function equalRanges(pieces: readonly Piece[], from: number, until: number, price: string): { from: number; until: number }[] {
  return pieces
    .filter((p) => p.price === price && p.from < until && from < p.until)
    .map((p) => ({ from: Math.max(p.from, from), until: Math.min(p.until, until) }));
}

/** The pieces with [from, until) replaced by `inside` (which covers it exactly). */
function replaced(pieces: readonly Piece[], from: number, until: number, inside: readonly Piece[]): Piece[] {
  const out: Piece[] = [];
  for (const p of pieces) if (p.until <= from) out.push(p);
  else if (p.from < from) out.push({ ...p, until: from });
  out.push(...inside);
  for (const p of pieces) if (p.from >= until) out.push(p);
  else if (p.until > until) out.push({ ...p, from: until });
  return out;
}

/** The pieces with the price lowered to `price` over [from, until) where it is higher or none. */
function lowered(pieces: readonly Piece[], from: number, until: number, price: string): Piece[] {
  const out: Piece[] = [];
  for (const p of pieces) {
    const a = Math.max(p.from, from);
    const b = Math.min(p.until, until);
    if (a >= b || (p.price !== null && !weiBelow(price, p.price))) {
      out.push(p);
      continue;
    }
    if (p.from < a) out.push({ ...p, until: a });
    out.push({ from: a, until: b, price });
    if (b < p.until) out.push({ ...p, from: b });
  }
  return out;
}

/** The floor over [from, until) from the spans that overlap it: the lowest price active at each second. */
export function sweep(spans: readonly FloorSpan[], from: number, until: number): Piece[] {
  const events: [number, 1 | -1, string][] = [];
  for (const s of spans) {
    const a = Math.max(s.from, from);
    const b = Math.min(s.until, until);
    if (a >= b) continue;
    events.push([a, 1, s.price]);
    if (b < until) events.push([b, -1, s.price]);
  }
  events.sort((x, y) => x[0] - y[0]);
  const heap = new PriceHeap();
  const out: Piece[] = [];
  let at = from;
  for (let i = 0; i < events.length; ) {
    const t = events[i]![0];
    if (t > at) {
      out.push({ from: at, until: t, price: heap.min() });
      at = t;
    }
    for (; i < events.length && events[i]![0] === t; i++) {
      const [, sign, price] = events[i]!;
      if (sign === 1) heap.add(price);
      else heap.remove(price);
    }
  }
  out.push({ from: at, until, price: heap.min() });
  return out;
}

/**
 * The points of the pieces over [from, until) (from is the first piece's
 * start): a point where the price changes, the first compared with the
 * floor before; and at `until`, the floor after the range when it differs
 * from the last piece's (so what follows keeps its value).
 */
function pointsOf(pieces: readonly Piece[], before: FloorPrice, until: number, after: FloorPrice): FloorPoint[] {
  const out: FloorPoint[] = [];
  let last = before;
  for (const p of pieces) {
    if (p.from >= p.until) continue;
    if (p.price !== last) out.push({ t: p.from, price: p.price });
    last = p.price;
  }
  if (until !== OPEN_END && after !== last) out.push({ t: until, price: after });
  return out;
}

/** A multiset of prices with its minimum (a binary heap, removals settled lazily). */
class PriceHeap {
  readonly #heap: string[] = [];
  readonly #removed = new Map<string, number>();

  add(p: string): void {
    const h = this.#heap;
    h.push(p);
    for (let i = h.length - 1; i > 0; ) {
      const parent = (i - 1) >> 1;
      if (!weiBelow(h[i]!, h[parent]!)) break;
      [h[parent], h[i]] = [h[i]!, h[parent]!];
      i = parent;
    }
  }

  remove(p: string): void {
    this.#removed.set(p, (this.#removed.get(p) ?? 0) + 1);
  }

  min(): FloorPrice {
    const h = this.#heap;
    for (;;) {
      if (h.length === 0) return null;
      const top = h[0]!;
      const n = this.#removed.get(top) ?? 0;
      if (n === 0) return top;
      if (n === 1) this.#removed.delete(top);
      else this.#removed.set(top, n - 1);
      this.#pop();
    }
  }

  #pop(): void {
    const h = this.#heap;
    const last = h.pop()!;
    if (h.length === 0) return;
    h[0] = last;
    for (let i = 0; ; ) {
      const l = 2 * i + 1;
      const r = l + 1;
      let m = i;
      if (l < h.length && weiBelow(h[l]!, h[m]!)) m = l;
      if (r < h.length && weiBelow(h[r]!, h[m]!)) m = r;
      if (m === i) return;
      [h[m], h[i]] = [h[i]!, h[m]!];
      i = m;
    }
  }
}
