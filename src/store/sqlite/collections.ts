import type { ScoreRow } from "../../domain/records.js";
import type { CollectionsRepository } from "../ports.js";
import { toScore } from "../shared/rows.js";
import type { SqliteStatements } from "./statements.js";

export class SqliteCollections implements CollectionsRepository {
  constructor(private readonly s: SqliteStatements) {}

  collectionId(address: string): number | undefined {
    return this.s.row("SELECT id FROM collections WHERE address = ?", [address])?.id as number | undefined;
  }

  score(collectionId: number): ScoreRow | undefined {
    const sql = `SELECT c.name, c.address, s.hype, s.gains, s.community, s.total
      FROM scores s, collections c WHERE s.collection_id = ? AND c.id = ?`;
    // Both sides by their key: a join on c.id = s.collection_id lets the planner scan scores.
    const r = this.s.row(sql, [collectionId, collectionId]);
    return r === undefined ? undefined : toScore(r);
  }
}

