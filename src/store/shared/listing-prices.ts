// Lowest prices of listing rows read as text, for both engines: the
// appraisal bound per asset (derive), a collection's floor at a time.

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

/** The lowest of floors' prices (wei, decimal), or undefined of none. */
export function lowestPrice(floors: readonly { price: string }[]): string | undefined {
  let best: bigint | undefined;
  for (const f of floors) {
    const p = BigInt(f.price);
    if (best === undefined || p < best) best = p;
  }
  return best === undefined ? undefined : String(best);
}
