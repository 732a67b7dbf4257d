// The floor's candles (GetCollectionCandles, docs/decisions.md "Floor
// history"), composed from what the store keeps of the floor's history
// (store/shared/floor-history.ts): the floor carried into a page, and the
// summary of each interval holding a change of the floor.

/**
 * A floor price in wei (a decimal string as stored: no sign, no leading
 * zero), or null: no listing active. Compared as strings (weiBelow), never
 * parsed: a page of candles reads up to 1,000 rows of four prices each.
 */
export type FloorPrice = string | null;

/** a < b for decimal wei strings without leading zeros: the shorter is smaller, else the first differing digit. */
export const weiBelow = (a: string, b: string): boolean => a.length < b.length || (a.length === b.length && a < b);

/** The summary of the points in one interval (floor_buckets): none when it holds no point. */
export interface FloorBucket {
  bucket: number;
  /** Lowest and highest non-null price of its points (null: all null). */
  low: FloorPrice;
  high: FloorPrice;
  /** Its first point's time and price, and its last point's price. */
  firstAt: number;
  first: FloorPrice;
  last: FloorPrice;
}

/** The buckets' lengths, each summarized from the one before (points for minutes). */
export const FLOOR_SPANS = [60, 3600, 86400] as const;
export type FloorSpanLength = (typeof FLOOR_SPANS)[number];

/** One candle's floor: open (at its first second), high, low and close (at its last second); null where no listing was active. */
export interface FloorCandle {
  open: FloorPrice;
  high: FloorPrice;
  low: FloorPrice;
  close: FloorPrice;
}

/**
 * The floor's candles of consecutive intervals of `length` from `start`,
 * `count` of them, from the floor before `start` and the bucket rows of that
 * length among them (oldest first).
 */
export function floorCandles(start: number, length: number, count: number, before: FloorPrice, rows: readonly FloorBucket[]): FloorCandle[] {
  const out: FloorCandle[] = [];
  let carry = before;
  let i = 0;
  for (let n = 0; n < count; n++) {
    const b = start + n * length;
    while (i < rows.length && rows[i]!.bucket < b) i++;
    const row = rows[i]?.bucket === b ? rows[i] : undefined;
    if (row === undefined) {
      out.push({ open: carry, high: carry, low: carry, close: carry });
      continue;
    }
    // The floor carried in holds from the interval's first second unless a point starts it.
    const opensAt = row.firstAt === b;
    const prices = opensAt ? [row.low, row.high] : [row.low, row.high, carry];
    out.push({ open: opensAt ? row.first : carry, high: highest(prices), low: lowest(prices), close: row.last });
    carry = row.last;
  }
  return out;
}

export function lowest(prices: readonly FloorPrice[]): FloorPrice {
  let out: FloorPrice = null;
  for (const p of prices) if (p !== null && (out === null || weiBelow(p, out))) out = p;
  return out;
}

export function highest(prices: readonly FloorPrice[]): FloorPrice {
  let out: FloorPrice = null;
  for (const p of prices) if (p !== null && (out === null || weiBelow(out, p))) out = p;
  return out;
}

