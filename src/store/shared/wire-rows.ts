import { type Fragment, LISTING_STATUS_JSON, listingBinary, type WireForm } from "../../domain/wire/fragments.js";
import type { ListingStatusName } from "../../domain/records.js";
import type { KeyValue, Page, PageRequest } from "../ports.js";

// Reading list rows as their ready answers (domain/wire/fragments.ts), alike
// on both engines: the SQL that puts a listing's moving fields and a social
// row's user between its stored parts, and a page made of fragments.

/** A SQL string literal. */
const literal = (text: string) => `'${text.replaceAll("'", "''")}'`;

/**
 * A listing's /v1 JSON from its stored parts and its current status and
 * lastUpdatedAt (its columns prefixed with `row`: "NEW." or none), one expression on both engines:
 * SQLite keeps it in wire_json by a trigger, PostgreSQL as a generated
 * column, so a read takes one column whatever moved the listing since.
 */
export function listingJsonSql(row: string): string {
  const status = Object.entries(LISTING_STATUS_JSON).map(([name, json]) => `WHEN ${literal(name)} THEN ${literal(json)}`);
  return `${row}wire_json_head || CAST(${row}last_updated_at AS TEXT) || ${row}wire_json_middle || CASE ${row}status ${status.join(" ")} END`;
}

/** The select list of a listing's answer, its id first (alias l). */
export function listingWireColumns(form: WireForm): string {
  return form === "binary" ? "l.id, l.wire_pb, l.last_updated_at, l.status" : "l.id, l.wire_json";
}

/** A listing's answer from the row listingWireColumns selected (its id left out). */
export function listingWire(form: WireForm, values: unknown[]): Fragment {
  return form === "json" ? (values[1] as string) : listingBinary(values[1] as Uint8Array, Number(values[2]), values[3] as ListingStatusName);
}

/**
 * The select list of a tweet's or an influencer's answer (alias x, its
 * user u): the user's JSON object or length-prefixed message between the
 * row's own parts. `bytes` is the engine's SQL for the user field's tag byte.
 */
export function socialWireColumns(form: WireForm, tagByte: string, asBytes: (sql: string) => string): string {
  return form === "json"
    ? "x.wire_json_head || u.wire_json || x.wire_json_tail"
    : asBytes(`x.wire_pb || ${tagByte} || u.wire_pb`);
}

/**
 * A keyset page's ready answers from up to limit + 1 rows, each [id, ...what
 * `wire` reads]: the extra row only says more follow. `lastId` is the id of
 * the page's last row when more follow: its key (the next page's start) is
 * read for that row alone, not with every row.
 */
export function wirePage(rows: unknown[][], limit: number, wire: (values: unknown[]) => Fragment): { fragments: Fragment[]; lastId: unknown } | undefined {
  const more = rows.length > limit;
  const n = more ? limit : rows.length;
  const fragments = new Array<Fragment>(n);
  for (let i = 0; i < n; i++) {
    // A row without its fragments (written by no upsert of this store): the caller reads the page as columns.
    if (rows[i]![1] === null) return undefined;
    fragments[i] = wire(rows[i]!);
  }
  return { fragments, lastId: more && n > 0 ? rows[n - 1]![0] : undefined };
}

/**
 * The page itself, its key read by `keyOf` for the last row's id; or, when
 * a row has no fragments, the page read as rows (`asRows`) and encoded whole.
 */
export function toWirePage<R>(
  rows: unknown[][],
  page: PageRequest,
  wire: (values: unknown[]) => Fragment,
  keyOf: (id: unknown) => KeyValue[],
  asRows: () => { page: Page<R>; encode: (row: R) => Fragment },
): Page<Fragment> {
  const read = wirePage(rows, page.limit, wire);
  if (read === undefined) {
    const { page: whole, encode } = asRows();
    return { rows: whole.rows.map(encode), nextKey: whole.nextKey };
  }
  return { rows: read.fragments, nextKey: read.lastId === undefined ? null : keyOf(read.lastId) };
}

/** A list's ready answers (each row [fragment]), or, when a row has none, the list read as rows and encoded whole (`asRows`). */
export function wireList(rows: unknown[][], asRows: () => Fragment[]): Fragment[] {
  const out = new Array<Fragment>(rows.length);
  for (let i = 0; i < rows.length; i++) {
    const f = rows[i]![0] as Fragment | null;
    if (f === null) return asRows();
    out[i] = f;
  }
  return out;
}

/** A keyset page of ready answers whose rows carry their own key (one round trip on PostgreSQL); undefined when a row has no fragments. */
export function keyedWirePage<R extends { wire: Fragment | null }>(rows: R[], limit: number, keyOf: (r: R) => KeyValue[]): Page<Fragment> | undefined {
  const more = rows.length > limit;
  const n = more ? limit : rows.length;
  const fragments = new Array<Fragment>(n);
  for (let i = 0; i < n; i++) {
    const wire = rows[i]!.wire;
    if (wire === null) return undefined;
    fragments[i] = wire;
  }
  return { rows: fragments, nextKey: more && n > 0 ? keyOf(rows[n - 1]!) : null };
}
