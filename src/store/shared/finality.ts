// A record's finality as the reads answer it (docs/chains.md, "Finality"):
// "final" at or below its chain's finalized block (the finality table,
// one row per chain), else "pending". Computed as the record is read, the
// same SQL on both engines: a finality moving forward changes no row, and
// the response caches forget everything when it moves (a change that
// reaches every collection of its chain).

/** The finality of a row in block `block` of chain `chain` (SQL expressions): one primary-key seek of a table of one row per chain. */
export function finalitySql(block: string, chain: string): string {
  return `CASE WHEN ${block} <= coalesce((SELECT f.block FROM finality f WHERE f.chain = ${chain}), -1) THEN 'final' ELSE 'pending' END`;
}

/**
 * A sale's kept /v1 JSON (wire_json: every field up to blockHash) with its
 * finality added as its last field, as the JSON writer places it (Sale's
 * field 13 after block_hash); NULL stays NULL (no kept answer).
 */
export function saleJsonWithFinality(json: string, block: string, chain: string): string {
  return `substr(${json}, 1, length(${json}) - 1) || CASE ${finalitySql(block, chain)} WHEN 'final' THEN ',"finality":"final"}' ELSE ',"finality":"pending"}' END`;
}
