import type { ListingRow } from "../../domain/rows.js";
import type { PgQueries } from "./statements.js";
import { type Page, type PageRequest, toPage } from "../ports/paging.js";
import type { ListingsFilter, ListingsRepository } from "../ports/reads.js";
import { listingKey, toListing } from "../shared/rows.js";
import { hexSql } from "./hex.js";
import { encodedWhole, listingWire, listingWireColumns, readyPage } from "../shared/wire-rows.js";
import { type Fragment, listingFragment, type WireForm } from "../../domain/wire/fragments.js";

export class PgListings implements ListingsRepository {
  constructor(private readonly q: PgQueries) {}

  /** The page as rows, or, given a form, as each row's ready answer in it (domain/wire/fragments.ts). */
  listingsPage(collectionId: number, filter: ListingsFilter, page: PageRequest, form?: undefined): Promise<Page<ListingRow>>;
  listingsPage(collectionId: number, filter: ListingsFilter, page: PageRequest, form: WireForm): Promise<Page<Fragment>>;
  listingsPage(collectionId: number, filter: ListingsFilter, page: PageRequest, form?: WireForm): Promise<Page<ListingRow> | Page<Fragment>>;
  listingsPage(collectionId: number, filter: ListingsFilter, page: PageRequest, form?: WireForm): Promise<Page<ListingRow> | Page<Fragment>> {
    return form === undefined ? this.#listingsPageRows(collectionId, filter, page) : this.#listingsPageReady(collectionId, filter, page, form);
  }

  async #listingsPageRows(collectionId: number, filter: ListingsFilter, page: PageRequest): Promise<Page<ListingRow>> {
    const { sql, values } = pageQuery(
      `c.address, l.marketplace_id, l.marketplace, l.asset_id::text AS asset_id, l.created_at, l.last_updated_at,
         l.price::text AS price, l.currency, l.maker, l.expires_at, l.quantity, l.block, ${hexSql("l.block_hash", "block_hash")}, l.status`,
      collectionId, filter, page,
    );
    return toPage(await this.q.rows(sql, values), page.limit, toListing, listingKey);
  }

  async #listingsPageReady(collectionId: number, filter: ListingsFilter, page: PageRequest, form: WireForm): Promise<Page<Fragment>> {
    // Each row's key comes with it (as sales ready pages); listingWireColumns's id is not needed.
    const { sql, values } = pageQuery(`l.created_at, l.marketplace, l.marketplace_id, ${listingWireColumns(form)}`, collectionId, filter, page);
    const rows = (await this.q.rows(sql, values, true)) as unknown[][];
    const ready = readyPage(
      rows,
      page.limit,
      (v) => (v[4] === null ? null : listingWire(form, v.slice(3))),
      (v) => [Number(v[0]), v[1] as string, v[2] as string],
    );
    return ready ?? encodedWhole(await this.#listingsPageRows(collectionId, filter, page), (r) => listingFragment(r, form));
  }
}

/** A keyset page of listings (created_at descending, then marketplace and its id), selecting `columns`. */
function pageQuery(columns: string, collectionId: number, filter: ListingsFilter, page: PageRequest): { sql: string; values: unknown[] } {
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
  // The collection's address only when the columns name it (a page of ready rows does not).
  const join = columns.includes("c.address") ? " JOIN collections c ON c.id = l.collection_id" : "";
  const sql = `SELECT ${columns}
     FROM listings l${join}
     WHERE ${where.join(" AND ")}
     ORDER BY l.created_at DESC, l.marketplace, l.marketplace_id LIMIT ${$(page.limit + 1)}`;
  return { sql, values };
}
