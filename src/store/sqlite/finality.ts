import { finalizedOfCollection } from "../shared/finality.js";
import type { SqliteStatements } from "./statements.js";

// A page of one collection's sales or transfers reads its chain's finalized
// block once, then each row's finality is a comparison (shared/finality.ts
// finalityOf): in the page's select list, a scalar subquery cost SQLite a
// fifth of a sales page's time (bench:serve-ab, docs/benchmarks.md).

const FINALIZED = `SELECT ${finalizedOfCollection("?")}`;

/** The finalized block of the chain of collection `collectionId` (-1: none). */
export function finalizedOf(s: SqliteStatements, collectionId: number): number {
  return s.prepare(FINALIZED).pluck().get(collectionId) as number;
}
