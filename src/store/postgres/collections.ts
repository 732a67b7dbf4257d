import type { ScoreRow } from "../../domain/records.js";
import type { PgQueries } from "./queries.js";
import type { CollectionsRepository } from "../ports.js";
import { toScore } from "../shared/rows.js";

export class PgCollections implements CollectionsRepository {
  constructor(private readonly q: PgQueries) {}

  async collectionId(address: string): Promise<number | undefined> {
    return (await this.q.rows<{ id: number }>("SELECT id FROM collections WHERE address = $1", [address]))[0]?.id;
  }

  async score(collectionId: number): Promise<ScoreRow | undefined> {
    const rows = await this.q.rows(
      `SELECT c.name, c.address, s.hype, s.gains, s.community, s.total
       FROM scores s JOIN collections c ON c.id = s.collection_id WHERE s.collection_id = $1`,
      [collectionId],
    );
    return rows[0] === undefined ? undefined : toScore(rows[0]);
  }
}
