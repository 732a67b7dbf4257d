import type { Finality } from "../../domain/rows.js";

// A record's finality as the reads answer it (docs/chains.md, "Finality"):
// "final" at or below its chain's finalized block (the finality table,
// one row per chain), else "pending". Computed as the record is read, the
// same SQL on both engines: a finality moving forward changes no row, and
// the response caches forget everything when it moves (a change that
// reaches every collection of its chain).

/** The finalized block of chain `chain` (an SQL expression of the row: a seek per row; -1 for none). */
export const finalizedOfChain = (chain: string): string => `coalesce((SELECT f.block FROM finality f WHERE f.chain = ${chain}), -1)`;

/**
 * The finalized block of the chain of collection `id`, a bound parameter:
 * uncorrelated, so computed once per statement (a page of one collection's
 * rows pays two seeks, not two per row; -1 for none).
 */
export const finalizedOfCollection = (id: string): string =>
  `(SELECT coalesce(max(f.block), -1) FROM collections x JOIN finality f ON f.chain = x.chain WHERE x.id = ${id})`;

/** The finality of a record in block `block` of a chain finalized up to `finalized` (-1: none). */
export function finalityOf(block: number, finalized: number): Finality {
  return block <= finalized ? "final" : "pending";
}

/** The finality of a row in block `block` (SQL expressions: `finalized` from finalizedOfChain or finalizedOfCollection). */
export function finalitySql(block: string, finalized: string): string {
  return `CASE WHEN ${block} <= ${finalized} THEN 'final' ELSE 'pending' END`;
}

/**
 * A sale's kept /v1 JSON (wire_json: every field up to blockHash) with its
 * finality added as its last field, as the JSON writer places it (Sale's
 * field 13 after block_hash); null stays null (no kept answer). Spliced
 * here rather than in SQL: a string slice and concatenation cost V8 no
 * copy, where SQLite's substr counts the text's characters twice per row
 * (bench:serve-ab, docs/benchmarks.md).
 */
export function saleJsonWithFinality(json: string | null, final: boolean): string | null {
  return json === null ? null : `${json.slice(0, -1)}${final ? FINAL_TAIL : PENDING_TAIL}`;
}

const FINAL_TAIL = ',"finality":"final"}';
const PENDING_TAIL = ',"finality":"pending"}';
