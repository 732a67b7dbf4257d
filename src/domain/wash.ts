// Wash trades (docs/wash-trades.md): a documented rule set over a
// collection's sales, each rule a pure function of the sales themselves, never
// of the order they arrived in. A store keeps each sale's flags (a bitmask) and
// evaluates them again around every sale written or taken back
// (store/shared/wash-scope.ts says which sales that touches); the tests' oracle
// applies washFlagsOf to the raw sales.

/** One rule: its name as answered (`washFlags`), its bit in a stored mask, its weight in the score. */
export interface WashRule {
  name: string;
  bit: number;
  weight: number;
}

export const WASH_RULES = [
  /** The buyer is the seller. */
  { name: "self_trade", bit: 1, weight: 1 },
  /** The same two wallets traded the same token in opposite directions within WASH_WINDOW_SECONDS. */
  { name: "back_and_forth", bit: 2, weight: 0.8 },
  /** The token came back to a wallet that sold it, through 3 or more sales within WASH_WINDOW_SECONDS: every sale of that loop. */
  { name: "closed_loop", bit: 4, weight: 0.7 },
  /**
   * Priced over OUTLIER_FACTOR times the median of its OUTLIER_NEIGHBOURS nearest sales (half before, half after; of an even
   * count, the upper middle), or under 1/OUTLIER_FACTOR of it (the lower middle): a price the market did not follow.
   */
  { name: "price_outlier", bit: 8, weight: 0.5 },
] as const satisfies readonly WashRule[];

export type WashRuleName = (typeof WASH_RULES)[number]["name"];

/**
 * Not a rule: a stored mask's mark of a sale paid in a token whose amounts
 * are not wei of ETH (USDC, DAI, APE: domain/currencies.ts). Set by the same
 * evaluation as the rules' bits, from the sale's own currency, it keeps the
 * sale out of every figure in wei as a flag does (the aggregates hold the
 * sales whose mask is 0) and out of what includeWash adds back; the outlier
 * rule neither judges it nor counts it among the neighbours. washNames and
 * washScore read the rules' bits alone: no answer shows it.
 */
export const OTHER_UNIT = 1 << 30;

/** The back-and-forth and closed-loop window: 30 days. */
export const WASH_WINDOW_SECONDS = 30 * 86_400;
/** The outlier rule's neighbours: 10 sales before and 10 after (fewer at a collection's ends; none judged with under OUTLIER_MIN_NEIGHBOURS). */
export const OUTLIER_NEIGHBOURS = 20;
export const OUTLIER_MIN_NEIGHBOURS = 10;
export const OUTLIER_FACTOR = 10n;

/** What the rules read of a sale. `id` names it uniquely among the sales given (a store's row id, the test's index). */
export interface WashSale<Id = unknown> {
  id: Id;
  assetId: string;
  seller: string;
  buyer: string;
  timestamp: number;
  block: number;
  hash: string;
  price: bigint;
  /** Paid in a token whose amounts are not wei of ETH (OTHER_UNIT). */
  otherUnit?: boolean;
}

/**
 * The rules' order of sales: the sales lists' (newest first: time, block,
 * then hash and asset id ascending) read backwards, oldest first, so that a
 * store reads it off its list index backwards. `hash` is compared as text:
 * lower-case hex, or any encoding that keeps the bytes' order.
 */
export function compareSales(a: WashSale, b: WashSale): number {
  return a.timestamp - b.timestamp || a.block - b.block || (a.hash < b.hash ? 1 : a.hash > b.hash ? -1 : 0) || b.assetId.length - a.assetId.length ||
    (a.assetId < b.assetId ? 1 : a.assetId > b.assetId ? -1 : 0);
}

/** The names of a mask's rules, in rule order. */
export function washNames(mask: number): WashRuleName[] {
  return WASH_RULES.filter((r) => (mask & r.bit) !== 0).map((r) => r.name);
}

/** A mask's score in [0, 1]: 1 - Π(1 - weight) over its rules, to 2 decimals (0: no rule hit). */
export function washScore(mask: number): number {
  let clean = 1;
  for (const r of WASH_RULES) if ((mask & r.bit) !== 0) clean *= 1 - r.weight;
  return Math.round((1 - clean) * 100) / 100;
}

/**
 * The token rules (self trade, back-and-forth, closed loop) over one token's
 * sales in compareSales order. Exact for every sale whose time lies within
 * WASH_WINDOW_SECONDS of the sales given on both sides (a caller fetching
 * [t0 - 2W, t1 + 2W] may trust the answers for [t0 - W, t1 + W]).
 *
 * Each rule is a pair (i, j), i before j within the window, j's buyer i's
 * seller: a back-and-forth when j's seller is also i's buyer (both legs), a
 * loop when a sale lies between them (every sale from i to j). One pass in
 * order, each sale j looking up the window's sales by seller (and by seller
 * and buyer): linear in the sales, where comparing every pair in the window
 * cost a token traded a thousand times in 30 days a million comparisons a
 * commit (bench:ingest, the generated token 0). The pairs' definition, as
 * the docs state it, is test/unit/wash.test.ts's reference.
 */
export function tokenWashMasks(sales: readonly WashSale[]): number[] {
  const n = sales.length;
  const masks = sales.map((s) => (s.seller === s.buyer ? 1 : 0));
  // Each seller's sales (indices, ascending) and each (seller, buyer)'s, with how far the window has left each behind.
  const bySeller = new Map<string, { at: number[]; from: number }>();
  const byLeg = new Map<string, { at: number[]; flagged: number }>();
  // A loop flags a range of sales: +1 at its first, -1 past its last, summed after.
  const loops = new Array<number>(n + 1).fill(0);
  let lo = 0;
  for (let j = 0; j < n; j++) {
    const b = sales[j]!;
    while (b.timestamp - sales[lo]!.timestamp > WASH_WINDOW_SECONDS) lo++;
    // The earliest sale of the window sold by j's buyer: a loop when it is not j's neighbour (the later ones' loops are within it).
    const sold = bySeller.get(b.buyer);
    if (sold !== undefined) {
      while (sold.from < sold.at.length && sold.at[sold.from]! < lo) sold.from++;
      const i = sold.at[sold.from];
      if (i !== undefined && j - i >= 2) {
        loops[i]!++;
        loops[j + 1]!--;
      }
    }
    // The window's sales from j's buyer to j's seller: the other legs. Those flagged by an earlier sale stay flagged.
    const legs = byLeg.get(`${b.buyer}|${b.seller}`);
    if (legs !== undefined && legs.at.length > 0 && legs.at.at(-1)! >= lo) {
      masks[j]! |= 2;
      for (let k = legs.at.length - 1; k >= legs.flagged && legs.at[k]! >= lo; k--) masks[legs.at[k]!]! |= 2;
      legs.flagged = legs.at.length;
    }
    let mine = bySeller.get(b.seller);
    if (mine === undefined) bySeller.set(b.seller, (mine = { at: [], from: 0 }));
    mine.at.push(j);
    const key = `${b.seller}|${b.buyer}`;
    let leg = byLeg.get(key);
    if (leg === undefined) byLeg.set(key, (leg = { at: [], flagged: 0 }));
    leg.at.push(j);
  }
  for (let k = 0, open = 0; k < n; k++) {
    open += loops[k]!;
    if (open > 0) masks[k]! |= 4;
  }
  return masks;
}

/**
 * The outlier rule over a run of a collection's sales in compareSales order.
 * `complete` tells, per end, whether the run starts (ends) at the
 * collection's first (last) sale; an answer is given (a number) only where
 * the neighbours it needs are in the run, undefined elsewhere.
 */
export function outlierMasks(sales: readonly WashSale[], complete: { first: boolean; last: boolean }): (number | undefined)[] {
  const half = OUTLIER_NEIGHBOURS / 2;
  // Compared as doubles where they settle it (apart by more than a double's rounding), exactly as wei where they do not.
  const approx = sales.map((s) => Number(s.price));
  const factor = Number(OUTLIER_FACTOR);
  const under = (n: number, s: number) => {
    const a = approx[n]! * factor;
    const b = approx[s]!;
    return a < b * (1 - 1e-12) ? true : a > b * (1 + 1e-12) ? false : sales[n]!.price * OUTLIER_FACTOR < sales[s]!.price;
  };
  const over = (n: number, s: number) => {
    const a = approx[n]!;
    const b = approx[s]! * factor;
    return a > b * (1 + 1e-12) ? true : a < b * (1 - 1e-12) ? false : sales[n]!.price > sales[s]!.price * OUTLIER_FACTOR;
  };
  return sales.map((_, i) => {
    if ((i < half && !complete.first) || (sales.length - 1 - i < half && !complete.last)) return undefined;
    const from = Math.max(0, i - half);
    const to = Math.min(sales.length - 1, i + half);
    const count = to - from;
    if (count < OUTLIER_MIN_NEIGHBOURS) return 0;
    // Counted, not sorted: over the upper middle of `count` prices (sorted[count >> 1]) times the factor exactly when
    // more than count >> 1 of them are under price / factor; under the lower middle (sorted[(count - 1) >> 1]) over the
    // factor exactly when more than (count - 1) >> 1 of them, counted from the top, are over price * factor.
    let below = 0;
    let above = 0;
    for (let k = from; k <= to; k++) {
      if (k === i) continue;
      if (under(k, i)) below++;
      else if (over(k, i)) above++;
    }
    return below > count >> 1 || above >= count - ((count - 1) >> 1) ? 8 : 0;
  });
}

/**
 * Every sale's mask, from a whole collection's sales in any order (or, told
 * `sorted`, already in compareSales order, as a store reads them): the rules
 * as documented, and OTHER_UNIT (the tests' oracle, and the backfill).
 */
export function washFlagsOf<Id>(sales: readonly WashSale<Id>[], { sorted: given = false } = {}): Map<Id, number> {
  const sorted = given ? sales : [...sales].sort(compareSales);
  const masks = new Map<Id, number>();
  for (const s of sorted) masks.set(s.id, s.otherUnit === true ? OTHER_UNIT : 0);
  const priced = sorted.filter((s) => s.otherUnit !== true);
  outlierMasks(priced, { first: true, last: true }).forEach((m, i) => masks.set(priced[i]!.id, m!));
  const byToken = new Map<string, WashSale<Id>[]>();
  for (const s of sorted) {
    let list = byToken.get(s.assetId);
    if (!list) byToken.set(s.assetId, (list = []));
    list.push(s);
  }
  for (const list of byToken.values()) tokenWashMasks(list).forEach((m, i) => masks.set(list[i]!.id, masks.get(list[i]!.id)! | m));
  return masks;
}
