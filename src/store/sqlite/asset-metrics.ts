import type { AppraisalRow, RarityRow } from "../../domain/rows.js";
import { assetIdSql, assetKey } from "./asset-key.js";
import { type Page, type PageRequest, toPage } from "../ports/paging.js";
import type { AssetMetricsRepository } from "../ports/reads.js";
import { toAppraisal, toRarity } from "../shared/rows.js";
import type { SqliteStatements } from "./statements.js";

// Appraisals and rarity: keyset pages in asset order and in rank order, and
// lookups of up to 20 assets (one index seek each, through json_each).

/**
 * A rarity row's owner: the token's, once a sale or transfer of it is known
 * (ownership.ts), else the one the row was written with.
 */
const TOKEN = "LEFT JOIN tokens t ON t.collection_id = r.collection_id AND t.asset_key = r.asset_key";
const OWNER = "CASE WHEN t.owner_block IS NOT NULL THEN t.current_owner ELSE r.current_owner END AS current_owner";

export class SqliteAssetMetrics implements AssetMetricsRepository {
  constructor(private readonly s: SqliteStatements) {}

  appraisalsPage(collectionId: number, page: PageRequest): Page<AppraisalRow> {
    const after = page.after ? "AND a.asset_key > ?" : "";
    const sql = `SELECT c.address, ${assetIdSql("a.")}, a.fair_market_value, a.confidence
      FROM appraisals a JOIN collections c ON c.id = a.collection_id
      WHERE a.collection_id = ? ${after}
      ORDER BY a.asset_key LIMIT ?`;
    const params: unknown[] = [collectionId];
    if (page.after) params.push(assetKey(page.after[0] as string));
    params.push(page.limit + 1);
    return toPage(this.s.rows(sql, params), page.limit, toAppraisal, (r) => [r.assetId]);
  }

  appraisalsByAsset(collectionId: number, assetIds: readonly string[]): AppraisalRow[] {
    const sql = `SELECT c.address, ${assetIdSql("a.")}, a.fair_market_value, a.confidence
      FROM json_each(?) j CROSS JOIN appraisals a ON a.collection_id = ? AND a.asset_key = j.value
      JOIN collections c ON c.id = a.collection_id
      ORDER BY a.asset_key`;
    return this.s.rows(sql, [keysJson(assetIds), collectionId]).map(toAppraisal);
  }

  rarityPage(collectionId: number, page: PageRequest): Page<RarityRow> {
    const after = page.after ? "AND (r.rarity_rank, r.asset_key) > (?, ?)" : "";
    const sql = `SELECT c.address, ${assetIdSql("r.")}, ${OWNER}, r.rarity_score, r.statistical_rarity, r.rarity_rank
      FROM rarity r JOIN collections c ON c.id = r.collection_id ${TOKEN}
      WHERE r.collection_id = ? ${after}
      ORDER BY r.rarity_rank, r.asset_key LIMIT ?`;
    const params: unknown[] = [collectionId];
    if (page.after) params.push(page.after[0], assetKey(page.after[1] as string));
    params.push(page.limit + 1);
    return toPage(this.s.rows(sql, params), page.limit, toRarity, (r) => [r.rarityRank, r.assetId]);
  }

  rarityByAsset(collectionId: number, assetIds: readonly string[]): RarityRow[] {
    const sql = `SELECT c.address, ${assetIdSql("r.")}, ${OWNER}, r.rarity_score, r.statistical_rarity, r.rarity_rank
      FROM json_each(?) j CROSS JOIN rarity r ON r.collection_id = ? AND r.asset_key = j.value
      JOIN collections c ON c.id = r.collection_id ${TOKEN}
      ORDER BY r.rarity_rank, r.asset_key`;
    return this.s.rows(sql, [keysJson(assetIds), collectionId]).map(toRarity);
  }
}

function keysJson(assetIds: readonly string[]): string {
  return JSON.stringify(assetIds.map(assetKey));
}

