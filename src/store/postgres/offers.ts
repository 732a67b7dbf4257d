import type { OfferRow } from "../../domain/rows.js";
import type { PgQueries } from "./statements.js";
import type { OfferScope, OffersFilter, OffersRepository } from "../ports/market.js";
import { type Page, type PageRequest, toPage } from "../ports/paging.js";
import { offerKey, toOffer } from "../shared/rows.js";
import { hexSql } from "./hex.js";

// Offers on PostgreSQL, as SQLite's (store/sqlite/offers.ts): asset_id NULL
// for a trait or collection-wide offer, trait_type and trait_value '' for a
// token or collection-wide one. The best standing offer of a scope is one
// range of offers_open_by_price, highest first, stepping over the expired.

export const OFFERS_MIGRATION = `
  CREATE TABLE offers (
    id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    marketplace text NOT NULL,
    marketplace_id text NOT NULL,
    collection_id integer NOT NULL REFERENCES collections(id),
    asset_id numeric(78,0),
    trait_type text COLLATE "C" NOT NULL,
    trait_value text COLLATE "C" NOT NULL,
    maker text NOT NULL,
    price numeric(78,0) NOT NULL,
    created_at bigint NOT NULL,
    last_updated_at bigint NOT NULL,
    expires_at bigint NOT NULL,
    status text NOT NULL CHECK (status IN ('CREATED', 'FULFILLED', 'CANCELLED', 'EXPIRED')),
    feed_seq bigint NOT NULL DEFAULT 0
  );
  CREATE UNIQUE INDEX offers_natural_key ON offers (marketplace, marketplace_id);
  CREATE INDEX offers_by_time ON offers (collection_id, created_at DESC, marketplace, marketplace_id COLLATE "C");
  CREATE INDEX offers_by_asset ON offers (collection_id, asset_id, created_at DESC, marketplace, marketplace_id COLLATE "C");
  CREATE INDEX offers_by_feed ON offers (collection_id, feed_seq);
  CREATE INDEX offers_open_by_price ON offers (collection_id, (coalesce(asset_id, -1)), trait_type, trait_value, price DESC,
    marketplace, marketplace_id COLLATE "C") WHERE status = 'CREATED';
`;

const COLUMNS = `c.address, o.marketplace_id, o.marketplace, coalesce(o.asset_id::text, '') AS asset_id, o.trait_type, o.trait_value, o.maker,
  o.price::text AS price, o.currency, o.created_at, o.last_updated_at, o.expires_at, o.block, ${hexSql("o.block_hash", "block_hash")}, o.status`;

export class PgOffers implements OffersRepository {
  constructor(private readonly q: PgQueries) {}

  async offersPage(collectionId: number, filter: OffersFilter, page: PageRequest, now: number): Promise<Page<OfferRow>> {
    const values: unknown[] = [collectionId];
    const $ = (v: unknown) => `$${values.push(v)}`;
    const where = ["o.collection_id = $1"];
    if (filter.assetId !== undefined) where.push(`o.asset_id = ${$(filter.assetId)}`);
    // A CREATED offer past its expiresAt is EXPIRED (decisions.md, "Offers").
    if (filter.status === "CREATED") where.push(`o.status = 'CREATED' AND (o.expires_at = 0 OR o.expires_at > ${$(now)})`);
    else if (filter.status === "EXPIRED") where.push(`(o.status = 'EXPIRED' OR (o.status = 'CREATED' AND o.expires_at <> 0 AND o.expires_at <= ${$(now)}))`);
    else if (filter.status !== undefined) where.push(`o.status = ${$(filter.status)}`);
    if (page.after) {
      const [createdAt, marketplace, marketplaceId] = page.after;
      const t = $(createdAt);
      // The leading "<=" bounds the index range; the rest breaks created_at ties.
      where.push(`o.created_at <= ${t} AND (o.created_at < ${t} OR (o.marketplace, o.marketplace_id COLLATE "C") > (${$(marketplace)}, ${$(marketplaceId)}))`);
    }
    const rows = await this.q.rows(
      `SELECT ${COLUMNS} FROM offers o JOIN collections c ON c.id = o.collection_id
       WHERE ${where.join(" AND ")}
       ORDER BY o.created_at DESC, o.marketplace, o.marketplace_id COLLATE "C" LIMIT ${$(page.limit + 1)}`,
      values,
    );
    return toPage(rows, page.limit, toOffer, offerKey);
  }

  async topBids(collectionIds: readonly number[], now: number): Promise<(OfferRow | undefined)[]> {
    if (collectionIds.length === 0) return [];
    // One statement (one snapshot): each collection's seek, by its position in the list.
    const rows = await this.q.rows(
      `SELECT u.n, b.* FROM unnest($1::integer[]) WITH ORDINALITY AS u(cid, n)
       CROSS JOIN LATERAL (
         SELECT ${COLUMNS} FROM offers o JOIN collections c ON c.id = o.collection_id
         WHERE o.collection_id = u.cid AND coalesce(o.asset_id, -1) = -1 AND o.trait_type = '' AND o.trait_value = ''
           AND o.status = 'CREATED' AND (o.expires_at = 0 OR o.expires_at > $2)
         ORDER BY o.price DESC, o.marketplace, o.marketplace_id COLLATE "C" LIMIT 1) b`,
      [collectionIds, now],
    );
    const out: (OfferRow | undefined)[] = collectionIds.map(() => undefined);
    for (const r of rows) out[Number(r.n) - 1] = toOffer(r);
    return out;
  }

  async bestOffers(collectionId: number, scopes: readonly OfferScope[], now: number): Promise<(OfferRow | undefined)[]> {
    if (scopes.length === 0) return [];
    // One statement (one snapshot): each scope's seek, by its position in the list.
    const rows = await this.q.rows(
      `SELECT s.n, b.* FROM jsonb_array_elements($2::jsonb) WITH ORDINALITY AS s(scope, n)
       CROSS JOIN LATERAL (
         SELECT ${COLUMNS} FROM offers o JOIN collections c ON c.id = o.collection_id
         WHERE o.collection_id = $1 AND coalesce(o.asset_id, -1) = coalesce((s.scope->>'assetId')::numeric, -1)
           AND o.trait_type = coalesce(s.scope->>'traitType', '') AND o.trait_value = coalesce(s.scope->>'traitValue', '')
           AND o.status = 'CREATED' AND (o.expires_at = 0 OR o.expires_at > $3)
         ORDER BY o.price DESC, o.marketplace, o.marketplace_id COLLATE "C" LIMIT 1) b`,
      [collectionId, JSON.stringify(scopes), now],
    );
    const out: (OfferRow | undefined)[] = scopes.map(() => undefined);
    for (const r of rows) out[Number(r.n) - 1] = toOffer(r);
    return out;
  }
}
