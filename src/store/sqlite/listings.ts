import type { ListingRow } from "../../domain/rows.js";
import { assetIdSql, assetKey } from "./asset-key.js";
import type { Statement } from "better-sqlite3";
import { type Fragment, listingFragment, type WireForm } from "../../domain/wire/fragments.js";
import { type Page, type PageRequest, toPage } from "../ports/paging.js";
import type { KeyValue } from "../../domain/rows.js";
import type { ListingsFilter, ListingsRepository } from "../ports/reads.js";
import { encodedWhole, listingWire, listingWireColumns, readyPage } from "../shared/wire-rows.js";
import { listingKey, toListing } from "../shared/rows.js";
import type { SqliteStatements } from "./statements.js";

export class SqliteListings implements ListingsRepository {
  /** A listing's page key by id (a ready page reads it for a page's last row only). */
  #listingKey: Statement | undefined;

  constructor(private readonly s: SqliteStatements) {}

  /** The page as rows, or, given a form, as each row's ready answer in it (domain/wire/fragments.ts). */
  listingsPage(collectionId: number, filter: ListingsFilter, page: PageRequest, form?: undefined): Page<ListingRow>;
  listingsPage(collectionId: number, filter: ListingsFilter, page: PageRequest, form: WireForm): Page<Fragment>;
  listingsPage(collectionId: number, filter: ListingsFilter, page: PageRequest, form?: WireForm): Page<ListingRow> | Page<Fragment>;
  listingsPage(collectionId: number, filter: ListingsFilter, page: PageRequest, form?: WireForm): Page<ListingRow> | Page<Fragment> {
    return form === undefined ? this.#listingsPageRows(collectionId, filter, page) : this.#listingsPageReady(collectionId, filter, page, form);
  }

  #listingsPageRows(collectionId: number, filter: ListingsFilter, page: PageRequest): Page<ListingRow> {
    const { sql, params } = pageQuery(
      `c.address, l.marketplace_id, l.marketplace, ${assetIdSql("l.")}, l.created_at, l.last_updated_at, l.price, l.currency, l.maker, l.expires_at, l.quantity, l.block, l.block_hash, l.status`,
      collectionId, filter, page,
    );
    return toPage(this.s.rows(sql, params), page.limit, toListing, listingKey);
  }

  #listingsPageReady(collectionId: number, filter: ListingsFilter, page: PageRequest, form: WireForm): Page<Fragment> {
    const { sql, params } = pageQuery(listingWireColumns(form), collectionId, filter, page);
    this.#listingKey ??= this.s.prepare("SELECT created_at, marketplace, marketplace_id FROM listings WHERE id = ?").raw();
    const key = this.#listingKey;
    const ready = readyPage(
      this.s.values(sql, params),
      page.limit,
      (v) => (v[1] === null ? null : listingWire(form, v)),
      (v) => key.get(v[0]) as KeyValue[],
    );
    return ready ?? encodedWhole(this.#listingsPageRows(collectionId, filter, page), (r) => listingFragment(r, form));
  }
}

/** A keyset page of listings (created_at descending, then marketplace and its id), selecting `columns`. */
function pageQuery(columns: string, collectionId: number, filter: ListingsFilter, page: PageRequest): { sql: string; params: unknown[] } {
  const where = ["l.collection_id = ?"];
  const params: unknown[] = [collectionId];
  for (const [column, value] of [
    ["asset_key", filter.assetId === undefined ? undefined : assetKey(filter.assetId)],
    ["marketplace", filter.marketplace],
    ["status", filter.status],
  ] as const) {
    if (value !== undefined) {
      where.push(`l.${column} = ?`);
      params.push(value);
    }
  }
  if (page.after) {
    const [createdAt, marketplace, marketplaceId] = page.after;
    where.push(`l.created_at <= ? AND (l.created_at < ? OR (l.created_at = ?
      AND (l.marketplace, l.marketplace_id) > (?, ?)))`);
    params.push(createdAt, createdAt, createdAt, marketplace, marketplaceId);
  }
  params.push(page.limit + 1);
  // The collection's address only when the columns name it (a page of ready rows does not).
  const join = columns.includes("c.address") ? " JOIN collections c ON c.id = l.collection_id" : "";
  const sql = `SELECT ${columns}
    FROM listings l INDEXED BY ${listingsIndex(filter)}${join}
    WHERE ${where.join(" AND ")}
    ORDER BY l.created_at DESC, l.marketplace, l.marketplace_id LIMIT ?`;
  return { sql, params };
}

/** The index whose leading columns bind the most selective filter (see sqlite-sales.ts). */
export function listingsIndex(f: ListingsFilter): string {
  if (f.assetId !== undefined) return "listings_by_asset";
  // With a marketplace, created_at then marketplace_id is its index's own
  // order; with a status too, that index holds both (migration 16): most
  // listings are not active, and reading each row to test its status read
  // hundreds per page of CREATED ones.
  if (f.marketplace !== undefined) return f.status !== undefined ? "listings_by_marketplace_status" : "listings_by_marketplace";
  if (f.status !== undefined) return "listings_by_status";
  return "listings_by_time";
}

