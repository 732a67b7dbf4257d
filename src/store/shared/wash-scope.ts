import { OTHER_UNIT_SYMBOLS } from "../../domain/currencies.js";
import { OTHER_UNIT, OUTLIER_NEIGHBOURS, outlierMasks, tokenWashMasks, WASH_WINDOW_SECONDS, type WashSale } from "../../domain/wash.js";

// Which sales a write's wash flags may move, and their new masks
// (docs/wash-trades.md). Each engine's writer marks every sale it inserts,
// changes (its old time and its new) or takes back, and before the commit
// reads the sales around the marks and writes the masks that changed:
//
// - the token rules look WASH_WINDOW_SECONDS (W) either side of a sale, so a
//   mark at t can move the token's sales in [t - W, t + W], whose rules read
//   [t - 2W, t + 2W];
// - the outlier rule reads 10 sales either side in the collection's order,
//   so a mark can move the 10 sales either side of it, whose rules read 10
//   more: the run read is every sale from the 21st before the first mark's
//   time to the 21st after the last's (by timestamp, ties included).
//
// Either way the answer is the rules applied to the whole collection (the
// oracle, domain/wash.ts washFlagsOf), whatever order the sales came in.

/** A sale as the evaluation reads it: its rule inputs, its stored mask, and where the aggregates hold it (a flip moves it in or out). */
export type StoredWashSale<Id> = WashSale<Id> & { mask: number; marketplace: string };

/** A sale whose mask changes, and its new mask. */
export type WashChange<Id> = [StoredWashSale<Id>, number];

interface Span {
  from: number;
  to: number;
}

/** A token's marks: their span, how many were sales the transaction inserted, and whether any was another write (a sale changed or taken back). */
interface TokenMarks extends Span {
  inserts: number;
  changed: boolean;
  /**
   * Whether its first sale inserted was alone (newSalesAlone's answer for
   * it) in the store as it was written, when the writer asked then: the
   * answer at the commit as long as it stays the token's only mark.
   */
  alone?: boolean;
}

/** One collection's marks: their time span, and each token's. */
export interface WashMarks {
  span: Span;
  tokens: Map<string, TokenMarks>;
}

/** Every sale in wei, flagged or not (includeWash): all but those paid in another unit (domain/wash.ts OTHER_UNIT). */
export const IN_WEI = `wash_flags < ${OTHER_UNIT}`;
/** The flagged sales in wei (what includeWash adds back), in the terms the partial index of flagged sales (migration 29) is chosen by. */
export const FLAGGED = `wash_flags <> 0 AND ${IN_WEI}`;

/**
 * Whether a sale whose mask went from `was` to `now` (one of them 0: a flip)
 * moves the flagged sales in wei, which the summaries with wash add to the
 * clean ones: not when the flagged mask marks another unit (OTHER_UNIT).
 */
export function movesFlaggedInWei(was: number, now: number): boolean {
  return ((now !== 0 ? now : was) & OTHER_UNIT) === 0;
}

/** The condition on a sale's currency (column `currency`) that its amounts are wei of ETH: the sales the outlier rule compares. */
export const PRICED_IN_WEI = `currency NOT IN (${[...OTHER_UNIT_SYMBOLS].map((c) => `'${c}'`).join(", ")})`;

/** Per collection, how many sales in wei the outlier run reaches past the marks: its 21st neighbour's time bounds the read. */
export const RUN_MARGIN = OUTLIER_NEIGHBOURS + 1;
/** Past this many marked tokens, one read of the collection's span may serve them all (readsWide). */
const TOKEN_SEEKS_UP_TO = 32;

/**
 * Whether one read of the collection's span (wideReadSpan) serves the marks
 * better than a seek per token: many tokens, and marks spread over at least
 * four windows, so that the read is at most twice what they cover (a
 * backfill). A live batch's marks lie within minutes: a read of the months
 * around them would be the collection's whole recent history per commit
 * (bench:ingest: 0.18 of the build before, against a seek per token).
 */
export function readsWide(marks: WashMarks): boolean {
  return marks.tokens.size > TOKEN_SEEKS_UP_TO && marks.span.to - marks.span.from >= 4 * WASH_WINDOW_SECONDS;
}

export class WashScope {
  readonly #marks = new Map<number, WashMarks>();

  get pending(): boolean {
    return this.#marks.size > 0;
  }

  /**
   * A sale of `assetId` (canonical decimal) at `timestamp` was written
   * (`inserted`: new to the store), changed or taken back; `alone`: an
   * inserted sale's newSalesAlone answer, asked as it was written.
   */
  mark(collectionId: number, assetId: string, timestamp: number, inserted = false, alone?: boolean): void {
    let m = this.#marks.get(collectionId);
    if (!m) this.#marks.set(collectionId, (m = { span: { from: timestamp, to: timestamp }, tokens: new Map() }));
    widen(m.span, timestamp);
    let t = m.tokens.get(assetId);
    if (t) widen(t, timestamp);
    else m.tokens.set(assetId, (t = { from: timestamp, to: timestamp, inserts: 0, changed: false }));
    if (!inserted) t.changed = true;
    else if (t.inserts++ === 0) t.alone = alone;
  }

  /** The collections marked by a write other than a new sale (a sale changed or taken back). */
  changedCollections(): number[] {
    return [...this.#marks].filter(([, m]) => [...m.tokens.values()].some((t) => t.changed)).map(([c]) => c);
  }

  /** The marks so far, by collection; the scope is emptied. */
  take(): Map<number, WashMarks> {
    const taken = new Map(this.#marks);
    this.#marks.clear();
    return taken;
  }

  /** Forgets the marks (their transaction rolled back: its sales are gone, and the masks it wrote with them). */
  clear(): void {
    this.#marks.clear();
  }
}

function widen(span: Span, t: number): void {
  if (t < span.from) span.from = t;
  if (t > span.to) span.to = t;
}

/**
 * The tokens whose marks are all sales the transaction inserted, each with
 * those sales out of the run (`isNew` tells them; the run holds every marked
 * sale), when all of them are there (a batch rolled back within the
 * transaction leaves marks of sales that are not). For such a token the
 * engine asks two questions (newSalesAlone) instead of reading its sales.
 *
 * The token rules only add flags as sales are added (every rule is a pair of
 * sales within the window, the later one's buyer the earlier one's seller;
 * a sale between them can only make a loop of them), and the stored masks
 * were exact before the transaction. So when no sale held before lies at or
 * after the new sales' first time, and none of the window before a new sale
 * was sold by its buyer, no pair has a new sale as its later one, none spans
 * one, and the held sales' flags stand: the new sales' token flags are
 * theirs alone (tokenWashMasks of the new sales), with nothing else to read.
 */
export function insertedOnly<Id>(marks: WashMarks, run: readonly StoredWashSale<Id>[], isNew: (s: StoredWashSale<Id>) => boolean): Map<string, StoredWashSale<Id>[]> {
  const found = new Map<string, StoredWashSale<Id>[]>();
  for (const [assetId, t] of marks.tokens) if (!t.changed) found.set(assetId, []);
  if (found.size === 0) return found;
  for (const s of run) if (isNew(s)) found.get(s.assetId)?.push(s);
  for (const [assetId, list] of found) if (list.length !== marks.tokens.get(assetId)!.inserts) found.delete(assetId);
  return found;
}

/**
 * What an engine asks of a token insertedOnly found, in the store (its new
 * sales included): how many of its sales lie at or after `from` (the new
 * sales' first time; more than the new sales: one held before does), and,
 * per new sale, whether one in its window before it was sold by its buyer.
 * Of a token with one new sale, both ask whether another sale lies in the
 * index from its window on, at or after its time or sold by its buyer
 * (SQLite asks as the sale is written: TokenMarks.alone).
 */
export function newSalesAlone<Id>(sales: readonly StoredWashSale<Id>[], heldFrom: (from: number) => number, soldBy: (s: StoredWashSale<Id>, window: Span) => boolean): boolean {
  if (heldFrom(sales[0]!.timestamp) !== sales.length) return false;
  return sales.every((s) => !soldBy(s, windowBefore(s)));
}

/** The window before a new sale in which a sale sold by its buyer would pair with it (newSalesAlone). */
export function windowBefore(s: { timestamp: number }): Span {
  return { from: s.timestamp - WASH_WINDOW_SECONDS, to: s.timestamp };
}

/** The span a token's sales are read over for its marks. */
export function tokenReadSpan(marks: Span): Span {
  return { from: marks.from - 2 * WASH_WINDOW_SECONDS, to: marks.to + 2 * WASH_WINDOW_SECONDS };
}

/**
 * The masks that change, from what the engine read for one collection's
 * marks, each list in the rules' order (domain/wash.ts compareSales: the
 * engines read their sales-list index backwards, so the sales come sorted and
 * need not carry their hash): `run`, the collection's sales with timestamp in
 * [runFrom, runTo] (`complete` telling whether either end is the
 * collection's own), and `tokens`, each marked token's sales over
 * tokenReadSpan (or, read with the run, the run's sales of that token when
 * the run covers that span).
 */
export function washChanges<Id>(
  marks: WashMarks,
  run: { sales: StoredWashSale<Id>[]; complete: { first: boolean; last: boolean } },
  tokens: Map<string, StoredWashSale<Id>[]>,
): WashChange<Id>[] {
  // The sales whose mask changes, with their new masks (no object per sale: a bulk import evaluates every one of them).
  const changed = new Map<Id, WashChange<Id>>();
  // The outlier rule over the sales in wei alone (the run's bounds count those: RUN_MARGIN of them either side).
  const priced = run.sales.some((s) => s.otherUnit === true) ? run.sales.filter((s) => s.otherUnit !== true) : run.sales;
  outlierMasks(priced, run.complete).forEach((m, i) => {
    const s = priced[i]!;
    if (m !== undefined && ((s.mask & ~8) | m) !== s.mask) changed.set(s.id, [s, (s.mask & ~8) | m]);
  });
  // A sale's unit, from its own currency (every marked sale is in the run): one in another unit is no outlier.
  for (const s of run.sales) {
    const was = changed.get(s.id)?.[1] ?? s.mask;
    const now = s.otherUnit === true ? (was & ~8) | OTHER_UNIT : was & ~OTHER_UNIT;
    if (now !== was) changed.set(s.id, [s, now]);
  }
  for (const [assetId, sales] of tokens) {
    const span = marks.tokens.get(assetId)!;
    tokenWashMasks(sales).forEach((m, i) => {
      const s = sales[i]!;
      if (s.timestamp < span.from - WASH_WINDOW_SECONDS || s.timestamp > span.to + WASH_WINDOW_SECONDS) return;
      const now = ((changed.get(s.id)?.[1] ?? s.mask) & (8 | OTHER_UNIT)) | m;
      if (now !== s.mask) changed.set(s.id, [s, now]);
      else changed.delete(s.id);
    });
  }
  return [...changed.values()];
}

/**
 * Each marked token's sales out of one read of the collection (readsWide:
 * cheaper than a seek each), that read spanning
 * wideReadSpan: the sales of each within its tokenReadSpan.
 */
export function tokenSalesOf<Id>(marks: WashMarks, all: readonly StoredWashSale<Id>[]): Map<string, StoredWashSale<Id>[]> {
  const tokens = new Map<string, StoredWashSale<Id>[]>([...marks.tokens.keys()].map((a) => [a, []]));
  for (const x of all) {
    const list = tokens.get(x.assetId);
    if (list === undefined) continue;
    const read = tokenReadSpan(marks.tokens.get(x.assetId)!);
    if (x.timestamp >= read.from && x.timestamp <= read.to) list.push(x);
  }
  return tokens;
}

/** The span one read of the collection covers for the run [runFrom, runTo] and every marked token (each within the marks' span). */
export function wideReadSpan(marks: WashMarks, runFrom: number, runTo: number): Span {
  const wide = tokenReadSpan(marks.span);
  return { from: Math.min(runFrom, wide.from), to: Math.max(runTo, wide.to) };
}
