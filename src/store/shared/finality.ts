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
