// Both engines' derive stores read open listings as rows of text; the
// appraisal bound is the lowest price per asset.

/** The lowest price per asset of listing rows. */
export function lowestPrices(rows: readonly { asset_id: string; price: string }[]): Map<string, bigint> {
  const out = new Map<string, bigint>();
  for (const r of rows) {
    const p = BigInt(r.price);
    const seen = out.get(r.asset_id);
    if (seen === undefined || p < seen) out.set(r.asset_id, p);
  }
  return out;
}
