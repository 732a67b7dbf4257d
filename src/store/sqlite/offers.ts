import type { OfferRow } from "../../domain/rows.js";
import { assetKey } from "./asset-key.js";
import type { OffersFilter, OffersRepository } from "../ports/market.js";
import { type Page, type PageRequest, toPage } from "../ports/paging.js";
import { offerKey, toOffer } from "../shared/rows.js";
import type { SqliteStatements } from "./statements.js";

// Offers (bids), migration 11: a token's (asset_key), a trait's (trait_type,
// trait_value) or the collection's (neither, ''). An offer stands while its
// status is CREATED and it has not expired (expires_at 0: never). The best
// standing offer of each scope is one seek of offers_open_by_price, highest
// price first, stepping over the expired ones.

export const OFFERS_SCHEMA = `
  CREATE TABLE offers (
    id INTEGER PRIMARY KEY,
    marketplace TEXT NOT NULL,
    marketplace_id TEXT NOT NULL,
    collection_id INTEGER NOT NULL REFERENCES collections(id),
    asset_key TEXT NOT NULL,
    trait_type TEXT NOT NULL,
    trait_value TEXT NOT NULL,
    maker TEXT NOT NULL,
    price TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    last_updated_at INTEGER NOT NULL,
    expires_at INTEGER NOT NULL,
    status TEXT NOT NULL,
    feed_seq INTEGER NOT NULL DEFAULT 0
  );
  CREATE UNIQUE INDEX offers_natural_key ON offers (marketplace, marketplace_id);
  CREATE INDEX offers_by_time ON offers (collection_id, created_at DESC, marketplace, marketplace_id);
  CREATE INDEX offers_by_asset ON offers (collection_id, asset_key, created_at DESC, marketplace, marketplace_id);
  CREATE INDEX offers_by_feed ON offers (collection_id, feed_seq);
  CREATE INDEX offers_open_by_price ON offers (
    collection_id, asset_key, trait_type, trait_value, length(price) DESC, price DESC, marketplace, marketplace_id)
    WHERE status = 'CREATED';
`;

const COLUMNS = `c.address, o.marketplace_id, o.marketplace, substr(o.asset_key, 3) AS asset_id, o.trait_type, o.trait_value, o.maker,
  o.price, o.currency, o.created_at, o.last_updated_at, o.expires_at, o.block, o.block_hash, o.status`;

/** The best standing offer of one scope (asset_key, trait_type, trait_value bound) at time ?: highest price, then marketplace, then its id. */
const BEST_OFFER = `SELECT ${COLUMNS} FROM offers o INDEXED BY offers_open_by_price JOIN collections c ON c.id = o.collection_id
  WHERE o.collection_id = ? AND o.asset_key = ? AND o.trait_type = ? AND o.trait_value = ? AND o.status = 'CREATED'
    AND (o.expires_at = 0 OR o.expires_at > ?)
  ORDER BY length(o.price) DESC, o.price DESC, o.marketplace, o.marketplace_id LIMIT 1`;

/** The condition of an offer answered with `status` at second `now` (decisions.md, "Offers"): a CREATED one past its expiresAt is EXPIRED. */
function statusAt(status: string, now: number): [string, unknown[]] {
  if (status === "CREATED") return ["o.status = 'CREATED' AND (o.expires_at = 0 OR o.expires_at > ?)", [now]];
  if (status === "EXPIRED") return ["(o.status = 'EXPIRED' OR (o.status = 'CREATED' AND o.expires_at <> 0 AND o.expires_at <= ?))", [now]];
  return ["o.status = ?", [status]];
}

export class SqliteOffers implements OffersRepository {
  constructor(private readonly s: SqliteStatements) {}

  offersPage(collectionId: number, filter: OffersFilter, page: PageRequest, now: number): Page<OfferRow> {
    const where = ["o.collection_id = ?"];
    const params: unknown[] = [collectionId];
    if (filter.assetId !== undefined) {
      where.push("o.asset_key = ?");
      params.push(assetKey(filter.assetId));
    }
    if (filter.status !== undefined) {
      const [sql, values] = statusAt(filter.status, now);
      where.push(sql);
      params.push(...values);
    }
    if (page.after) {
      const [createdAt, marketplace, marketplaceId] = page.after;
      where.push("o.created_at <= ? AND (o.created_at < ? OR (o.created_at = ? AND (o.marketplace, o.marketplace_id) > (?, ?)))");
      params.push(createdAt, createdAt, createdAt, marketplace, marketplaceId);
    }
    const sql = `SELECT ${COLUMNS} FROM offers o INDEXED BY ${filter.assetId !== undefined ? "offers_by_asset" : "offers_by_time"}
      JOIN collections c ON c.id = o.collection_id
      WHERE ${where.join(" AND ")} ORDER BY o.created_at DESC, o.marketplace, o.marketplace_id LIMIT ?`;
    params.push(page.limit + 1);
    return toPage(this.s.rows(sql, params), page.limit, toOffer, offerKey);
  }

  topBids(collectionIds: readonly number[], now: number): (OfferRow | undefined)[] {
    return this.s.snapshot(() => collectionIds.map((id) => this.bestOffers(id, [{}], now)[0]));
  }

  bestOffers(collectionId: number, scopes: readonly { assetId?: string; traitType?: string; traitValue?: string }[], now: number): (OfferRow | undefined)[] {
    return this.s.snapshot(() =>
      scopes.map((scope) => {
        const row = this.s.row(BEST_OFFER, [
          collectionId, scope.assetId === undefined ? "" : assetKey(scope.assetId), scope.traitType ?? "", scope.traitValue ?? "", now,
        ]);
        return row === undefined ? undefined : toOffer(row);
      }),
    );
  }
}
