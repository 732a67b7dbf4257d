import type { ListingRow } from "../../domain/records.js";
import type { PgQueries } from "./queries.js";
import { type ListingsFilter, type ListingsRepository, type Page, type PageRequest, toPage } from "../ports.js";
import { listingKey, toListing } from "../shared/rows.js";

export class PgListings implements ListingsRepository {
  constructor(private readonly q: PgQueries) {}

  async listingsPage(collectionId: number, filter: ListingsFilter, page: PageRequest): Promise<Page<ListingRow>> {
    const values: unknown[] = [collectionId];
    const $ = (v: unknown) => `$${values.push(v)}`;
    const where = ["l.collection_id = $1"];
    if (filter.assetId !== undefined) where.push(`l.asset_id = ${$(filter.assetId)}`);
    if (filter.marketplace !== undefined) where.push(`l.marketplace = ${$(filter.marketplace)}`);
    if (filter.status !== undefined) where.push(`l.status = ${$(filter.status)}`);
    if (page.after) {
      const [createdAt, marketplace, marketplaceId] = page.after;
      const t = $(createdAt);
      // The leading "<=" bounds the index range; the rest breaks created_at ties.
      where.push(`l.created_at <= ${t} AND (l.created_at < ${t} OR (l.marketplace, l.marketplace_id) > (${$(marketplace)}, ${$(marketplaceId)}))`);
    }
    const rows = await this.q.rows(
      `SELECT c.address, l.marketplace_id, l.marketplace, l.asset_id::text AS asset_id, l.created_at, l.last_updated_at,
         l.price::text AS price, l.status
       FROM listings l JOIN collections c ON c.id = l.collection_id
       WHERE ${where.join(" AND ")}
       ORDER BY l.created_at DESC, l.marketplace, l.marketplace_id LIMIT ${$(page.limit + 1)}`,
      values,
    );
    return toPage(rows, page.limit, toListing, listingKey);
  }
}
