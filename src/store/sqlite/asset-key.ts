// Stored form of asset ids: the canonical decimal id prefixed with its
// two-digit length, so that text order is numeric order ("02" + "10" sorts
// after "01" + "9"). Ids are at most 78 digits, so two digits suffice.

export function assetKey(assetId: string): string {
  return String(assetId.length).padStart(2, "0") + assetId;
}

/** SQL expression turning the asset_key column of `alias` back into the id. */
export function assetIdSql(alias: string): string {
  return `substr(${alias}asset_key, 3) AS asset_id`;
}
