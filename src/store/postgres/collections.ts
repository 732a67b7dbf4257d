import { refParts } from "../../domain/chains.js";
import type { ScoreRow } from "../../domain/rows.js";
import type { PgQueries } from "./statements.js";
import type { CollectionsRepository } from "../ports/reads.js";
import { toScore } from "../shared/rows.js";

/** Collections (chains.ts collectionRef) whose ids are remembered, at most (then forgotten all at once and read again). */
const MAX_REMEMBERED = 100_000;

export class PgCollections implements CollectionsRepository {
  /**
   * The ids of collections found: a collection, once registered, keeps its id
   * (nothing deletes or renumbers collections; a replica has the primary's),
   * so every request after the first saves a round trip. Collections not found
   * are not remembered: they may be registered by the next write.
   */
  readonly #ids = new Map<string, number>();

  constructor(private readonly q: PgQueries) {}

  async collectionId(ref: string): Promise<number | undefined> {
    const known = this.#ids.get(ref);
    if (known !== undefined) return known;
    const { chain, address } = refParts(ref);
    const id = (await this.q.rows<{ id: number }>("SELECT id FROM collections WHERE chain = $1 AND address = $2", [chain, address]))[0]?.id;
    if (id !== undefined) {
      if (this.#ids.size >= MAX_REMEMBERED) this.#ids.clear();
      this.#ids.set(ref, id);
    }
    return id;
  }

  async finalized(chain: string): Promise<number> {
    const r = (await this.q.rows<{ block: string }>("SELECT block FROM finality WHERE chain = $1", [chain]))[0];
    return r === undefined ? -1 : Number(r.block);
  }

  async knownMarketplaces(): Promise<string[]> {
    return (await this.q.rows<{ name: string }>("SELECT name FROM marketplaces ORDER BY name", [])).map((r) => r.name);
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
