import { refParts } from "../../domain/chains.js";
import type { ScoreRow } from "../../domain/rows.js";
import type { CollectionsRepository } from "../ports/reads.js";
import { toScore } from "../shared/rows.js";
import type { SqliteStatements } from "./statements.js";
import { finalizedOfCollection } from "../shared/finality.js";

const FINALIZED = `SELECT ${finalizedOfCollection("?")}`;

/**
 * The finalized block of the chain of collection `collectionId` (-1: none).
 * A page of one collection's sales or transfers reads it once, then each
 * row's finality is a comparison (shared/finality.ts finalityOf): in the
 * page's select list, a scalar subquery cost SQLite a fifth of a sales
 * page's time (bench:serve-ab, docs/benchmarks.md).
 */
export function finalizedOf(s: SqliteStatements, collectionId: number): number {
  return s.prepare(FINALIZED).pluck().get(collectionId) as number;
}

export class SqliteCollections implements CollectionsRepository {
  /**
   * Collections found (chains.ts collectionRef), with their ids. A collection is never deleted or given
   * another id once it has one, and this connection reads one file for its
   * whole life, so a found id stays true; a collection not found is looked up
   * again every time (an import may add it). Bounded by the collections the
   * store holds.
   */
  readonly #ids = new Map<string, number>();

  constructor(private readonly s: SqliteStatements) {}

  collectionId(ref: string): number | undefined {
    const known = this.#ids.get(ref);
    if (known !== undefined) return known;
    const { chain, address } = refParts(ref);
    const id = this.s.row("SELECT id FROM collections WHERE chain = ? AND address = ?", [chain, address])?.id as number | undefined;
    if (id !== undefined) this.#ids.set(ref, id);
    return id;
  }

  finalized(chain: string): number {
    return (this.s.prepare("SELECT block FROM finality WHERE chain = ?").pluck().get(chain) as number | undefined) ?? -1;
  }

  knownMarketplaces(): string[] {
    return this.s.prepare("SELECT name FROM marketplaces ORDER BY name").pluck().all() as string[];
  }

  score(collectionId: number): ScoreRow | undefined {
    const sql = `SELECT c.name, c.address, s.hype, s.gains, s.community, s.total
      FROM scores s, collections c WHERE s.collection_id = ? AND c.id = ?`;
    // Both sides by their key: a join on c.id = s.collection_id lets the planner scan scores.
    const r = this.s.row(sql, [collectionId, collectionId]);
    return r === undefined ? undefined : toScore(r);
  }
}

