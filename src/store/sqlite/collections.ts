import type { ScoreRow } from "../../domain/records.js";
import type { CollectionsRepository } from "../ports.js";
import { type Row, toScore } from "../shared/rows.js";
import type { SqliteStatements } from "./statements.js";

export class SqliteCollections implements CollectionsRepository {
  constructor(private readonly s: SqliteStatements) {}

  collectionId(address: string): number | undefined {
    const row = this.s.prepare("SELECT id FROM collections WHERE address = ?").get(address) as { id: number } | undefined;
    return row?.id;
  }

  score(collectionId: number): ScoreRow | undefined {
    const sql = `SELECT c.name, c.address, s.hype, s.gains, s.community, s.total
      FROM scores s, collections c WHERE s.collection_id = ? AND c.id = ?`;
    // Both sides by their key: a join on c.id = s.collection_id lets the planner scan scores.
    const r = this.s.prepare(sql).get(collectionId, collectionId) as Row | undefined;
    return r === undefined ? undefined : toScore(r);
  }
}

