import type { AppraisalRow, RarityRow } from "../../domain/rows.js";
import type { PgQueries } from "./statements.js";
import { type Page, type PageRequest, toPage } from "../ports/paging.js";
import type { AssetMetricsRepository } from "../ports/reads.js";
import { toAppraisal, toRarity } from "../shared/rows.js";

// The same pages and lookups as SQLite's, on numeric asset ids (their order
// is numeric order) and row comparisons; lookups bind an array.

const APPRAISAL_COLUMNS = "c.address, a.asset_id::text AS asset_id, a.fair_market_value::text AS fair_market_value, a.confidence";
/** A rarity row's owner: the token's once a sale or transfer of it is known (ownership.ts), else the row's own. */
const RARITY_COLUMNS =
  "c.address, r.asset_id::text AS asset_id, CASE WHEN t.owner_block IS NOT NULL THEN t.current_owner ELSE r.current_owner END AS current_owner, " +
  "r.rarity_score, r.statistical_rarity, r.rarity_rank";
const TOKEN = "LEFT JOIN tokens t ON t.collection_id = r.collection_id AND t.asset_id = r.asset_id";

export class PgAssetMetrics implements AssetMetricsRepository {
  constructor(private readonly q: PgQueries) {}

  async appraisalsPage(collectionId: number, page: PageRequest): Promise<Page<AppraisalRow>> {
    const after = page.after ? "AND a.asset_id > $3" : "";
    const rows = await this.q.rows(
      `SELECT ${APPRAISAL_COLUMNS} FROM appraisals a JOIN collections c ON c.id = a.collection_id
       WHERE a.collection_id = $1 ${after} ORDER BY a.asset_id LIMIT $2`,
      page.after ? [collectionId, page.limit + 1, page.after[0]] : [collectionId, page.limit + 1],
    );
    return toPage(rows, page.limit, toAppraisal, (r) => [r.assetId]);
  }

  async appraisalsByAsset(collectionId: number, assetIds: readonly string[]): Promise<AppraisalRow[]> {
    const rows = await this.q.rows(
      `SELECT ${APPRAISAL_COLUMNS} FROM appraisals a JOIN collections c ON c.id = a.collection_id
       WHERE a.collection_id = $1 AND a.asset_id = ANY($2::numeric[]) ORDER BY a.asset_id`,
      [collectionId, assetIds],
    );
    return rows.map(toAppraisal);
  }

  async rarityPage(collectionId: number, page: PageRequest): Promise<Page<RarityRow>> {
    const after = page.after ? "AND (r.rarity_rank, r.asset_id) > ($3, $4)" : "";
    const rows = await this.q.rows(
      `SELECT ${RARITY_COLUMNS} FROM rarity r JOIN collections c ON c.id = r.collection_id ${TOKEN}
       WHERE r.collection_id = $1 ${after} ORDER BY r.rarity_rank, r.asset_id LIMIT $2`,
      page.after ? [collectionId, page.limit + 1, page.after[0], page.after[1]] : [collectionId, page.limit + 1],
    );
    return toPage(rows, page.limit, toRarity, (r) => [r.rarityRank, r.assetId]);
  }

  async rarityByAsset(collectionId: number, assetIds: readonly string[]): Promise<RarityRow[]> {
    const rows = await this.q.rows(
      `SELECT ${RARITY_COLUMNS} FROM rarity r JOIN collections c ON c.id = r.collection_id ${TOKEN}
       WHERE r.collection_id = $1 AND r.asset_id = ANY($2::numeric[]) ORDER BY r.rarity_rank, r.asset_id`,
      [collectionId, assetIds],
    );
    return rows.map(toRarity);
  }
}
