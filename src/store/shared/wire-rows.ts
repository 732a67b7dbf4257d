import { type Fragment, LISTING_BLOCK_JSON, LISTING_STATUS_JSON, LISTING_STATUS_NAME_JSON, listingBinary, type WireForm } from "../../domain/wire/fragments.js";
import { hexOrNone } from "./rows.js";
import type { ListingStatusName } from "../../domain/rows.js";
import type { Page } from "../ports/paging.js";
import type { KeyValue } from "../../domain/rows.js";

// Reading list rows as their ready answers (domain/wire/fragments.ts), alike
// on both engines: the SQL that puts a listing's moving fields and a social
// row's user between its stored parts, and a page made of fragments.

/** A SQL string literal. */
const literal = (text: string) => `'${text.replaceAll("'", "''")}'`;

/**
 * A listing's /v1 JSON from its stored parts and its current status and
 * lastUpdatedAt, then its block and block hash (its columns prefixed with
 * `row`: "NEW." or none; `hex`: the engine's hex.ts hexExpr), one
 * expression on both engines: SQLite keeps it in wire_json by a trigger,
 * PostgreSQL as a generated column, so a read takes one column whatever
 * moved the listing since (domain/wire/fragments.ts listingJson).
 */
export function listingJsonSql(row: string, hex: (blob: string) => string): string {
  const status = Object.entries(LISTING_STATUS_NAME_JSON).map(([name, json]) => `WHEN ${literal(name)} THEN ${literal(json)}`);
  const { block, hash, end } = LISTING_BLOCK_JSON;
  return `${row}wire_json_head || CAST(${row}last_updated_at AS TEXT) || ${row}wire_json_middle || CASE ${row}status ${status.join(" ")} END
    || ${literal(block)} || CAST(${row}block AS TEXT) || ${literal(hash)}
    || CASE WHEN ${row}block_hash IS NULL THEN '' ELSE ${hex(`${row}block_hash`)} END || ${literal(end)}`;
}

/**
 * listingJsonSql as the migrations before 26 made it (a listing had no
 * block then): they run on a new store before migration 26 adds the
 * columns, so they keep their own expression.
 */
export function listingJsonSqlBefore26(row: string): string {
  const status = Object.entries(LISTING_STATUS_JSON).map(([name, json]) => `WHEN ${literal(name)} THEN ${literal(json)}`);
  return `${row}wire_json_head || CAST(${row}last_updated_at AS TEXT) || ${row}wire_json_middle || CASE ${row}status ${status.join(" ")} END`;
}

/** The select list of a listing's answer, its id first (alias l). */
export function listingWireColumns(form: WireForm): string {
  return form === "binary" ? "l.id, l.wire_pb, l.last_updated_at, l.status, l.block, l.block_hash" : "l.id, l.wire_json";
}

/** A listing's answer from the row listingWireColumns selected (its id left out). */
export function listingWire(form: WireForm, values: unknown[]): Fragment {
  return form === "json"
    ? (values[1] as string)
    : listingBinary(values[1] as Uint8Array, Number(values[2]), values[3] as ListingStatusName, Number(values[4]), hexOrNone(values[5]));
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
 * A keyset page of ready answers from up to limit + 1 rows (the extra one
 * only says more follow), or undefined when a row has none (written by no
 * upsert of this store: the caller answers the page from its columns,
 * encodedWhole). `keyOf` gives the next page's start for the page's last
 * row alone: SQLite reads it by rowid then, PostgreSQL has it in the row.
 */
export function readyPage<R>(rows: R[], limit: number, wire: (r: R) => Fragment | null, keyOf: (r: R) => KeyValue[]): Page<Fragment> | undefined {
  const more = rows.length > limit;
  const n = more ? limit : rows.length;
  const fragments = new Array<Fragment>(n);
  for (let i = 0; i < n; i++) {
    const f = wire(rows[i]!);
    if (f === null) return undefined;
    fragments[i] = f;
  }
  return { rows: fragments, nextKey: more && n > 0 ? keyOf(rows[n - 1]!) : null };
}

/** A list's ready answers (each row [fragment]), or undefined when a row has none (readyPage). */
export function readyList(rows: unknown[][]): Fragment[] | undefined {
  const out = new Array<Fragment>(rows.length);
  for (let i = 0; i < rows.length; i++) {
    const f = rows[i]![0] as Fragment | null;
    if (f === null) return undefined;
    out[i] = f;
  }
  return out;
}

/** A page read as columns, each row encoded whole: the answer when a row has no ready one. */
export function encodedWhole<R>(page: Page<R>, encode: (r: R) => Fragment): Page<Fragment> {
  return { rows: page.rows.map(encode), nextKey: page.nextKey };
}

/**
 * Migration 21 on either engine: every sale's kept JSON answers its block
 * hash, "" (none) for the sales already stored; `head` is the JSON without
 * its closing brace. A JSON that has it (made by an older migration's
 * backfill, which runs this build's code) is left as it is.
 */
export const SALE_JSON_BLOCK_HASH = (head: string) =>
  `UPDATE sales SET wire_json = ${head} || ',"blockHash":""}' WHERE wire_json NOT LIKE '%,"blockHash":""}';`;

/**
 * Migration 26's columns on either engine: a listing's and an offer's
 * on-chain block and its hash (0 and none for the orders already stored,
 * made off-chain as far as the store knows). `types` are the engine's
 * column types. Each engine then makes a listing's whole JSON answer them
 * (listingJsonSql): the fragments stay as they were.
 */
export const LISTING_BLOCK_COLUMNS = (types: { block: string; hash: string }) => `
  ALTER TABLE listings ADD COLUMN block ${types.block} NOT NULL DEFAULT 0;
  ALTER TABLE listings ADD COLUMN block_hash ${types.hash};
  ALTER TABLE offers ADD COLUMN block ${types.block} NOT NULL DEFAULT 0;
  ALTER TABLE offers ADD COLUMN block_hash ${types.hash};`;
