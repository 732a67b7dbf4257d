import type { DescMessage, Message } from "@bufbuild/protobuf";
import { BinaryWriter } from "@bufbuild/protobuf/wire";
import {
  InfluencerSchema,
  ListingSchema,
  ListingStatus,
  SaleSchema,
  SocialUserSchema,
  TweetSchema,
} from "../../../gen/marketdata/v1/resources_pb.js";
import { LISTING_STATUSES, type InfluencerRow, type ListingRow, type ListingStatusName, type SaleRow, type SocialUserRow, type TweetRow } from "../rows.js";
import { type BinaryWriterFn, compileBinaryWriter } from "./binary-writer.js";
import { compileJsonWriter } from "./json-writer.js";
import { toInfluencer, toListing, toSale, toSocialUser, toTweet } from "./messages.js";
import { washNames, washScore } from "../wash.js";

// The ready answers of list rows (issue 35: a cold page read as a range of
// ready fragments, not rebuilt from columns). The store writes each row of
// sales, listings, tweets and influencers, at import and ingest, with its
// /v1 JSON and (but a sale, issue 50) its protobuf binary, made here from the
// same messages and the same JSON writer the service answers with; a page is
// then one text or blob column per row, and the codec splices them into the envelope
// (spliceJson, spliceBinary). Reading a row's ten columns into JavaScript
// values cost about four times as much as reading its ready JSON.
//
// What a later write changes without the record is not in the fragment but
// put in by the read, in SQL, so no write has to rebuild a fragment in a
// trigger: a listing's status and lastUpdatedAt (moved by sales and
// transfers, fillable.ts) sit between a stored head and middle, and its
// block and block hash (columns, issue 52) after its status, so that the
// hash is not kept again in the fragments; a tweet's
// and an influencer's user (a social_users row written on its own) between a
// head and a tail. Binary needs no such order: protobuf takes a message's
// fields in any order, so the moved fields come after the stored bytes.
//
// A change to these messages or to the /v1 dialect changes the fragments:
// the store then needs a migration that writes them again (the test of
// fragments pins a digest of the descriptors to say so).

/** Which of its forms a list answer is read in: /v1 JSON or protobuf binary. */
export type WireForm = "json" | "binary";

/** One row's ready answer, in the form asked for. */
export type Fragment = string | Uint8Array;

/** The JSON writers of the records, compiled once per process. */
const json = {
  sale: compileJsonWriter(SaleSchema),
  listing: compileJsonWriter(ListingSchema),
  user: compileJsonWriter(SocialUserSchema),
  tweet: compileJsonWriter(TweetSchema),
  influencer: compileJsonWriter(InfluencerSchema),
};

/** A JSON text cut around one field's value: what comes before it (with its key) and after it. */
interface Cut {
  head: string;
  tail: string;
}

/**
 * `text` cut around the value `value` of its first top-level key `key`. A
 * raw `"key":` cannot occur inside a JSON string (its quotes would be
 * escaped), and the fields cut at here come before any nested message of
 * the same name, so the first occurrence is the field's.
 */
function cutAt(text: string, key: string, value: string): Cut {
  const marker = `${JSON.stringify(key)}:${value}`;
  const at = text.indexOf(marker);
  if (at < 0) throw new Error(`fragments: ${marker} not found`);
  return { head: text.slice(0, at + marker.length - value.length), tail: text.slice(at + marker.length) };
}

/** The binary writers of the records (binary-writer.ts: toBinary's bytes, a tenth of its time). */
const binary = new Map<DescMessage, BinaryWriterFn>(
  [SaleSchema, ListingSchema, SocialUserSchema, TweetSchema, InfluencerSchema].map((schema) => [schema, compileBinaryWriter(schema)]),
);

function bytes(schema: DescMessage, message: Message): Uint8Array {
  return binary.get(schema)!(message);
}

// Sales: nothing moves a sale's answer but the sale's own record. A sale keeps
// its JSON only; its binary is encoded from the columns as it is read.

/**
 * A sale's kept JSON (wire_json): its answer without its finality and wash
 * fields. Its finality moves without the sale (a finality record), and its
 * wash flags with its neighbours' records (domain/wash.ts), so the reads
 * put both back (store/shared/finality.ts, the wash_flags column); the
 * writer puts them after blockHash (fields 13 to 15), before the fees
 * (16, 17), and so they are cut out of the middle here.
 */
export function saleJson(r: SaleRow): string {
  const whole = json.sale(toSale({ ...r, priceUsd: "" }));
  const from = whole.lastIndexOf(FINALITY_FIELD);
  // Its USD price (field 18) follows the price points, not the sale: put in at read too, and its quantity (19, last) after it
  // (a column: the JSON kept before quantities were told needs no rewrite).
  return `${whole.slice(0, from)}${whole.slice(whole.indexOf(FEES_FIELD, from), whole.lastIndexOf(PRICE_USD_FIELD))}}`;
}

/** The start of the fields a read puts back (the sale's finality, then its wash flags), and of the fees after them. */
const FINALITY_FIELD = ',"finality":';
const FEES_FIELD = ',"marketplaceFee":';
const PRICE_USD_FIELD = ',"priceUsd":';
const QUANTITY_FIELD = ',"quantity":';
/** The fees of a sale kept before they were told (migration 31): none. */
const NO_FEES = `${FEES_FIELD}"","royaltyFee":""}`;
const CLEAN = ',"washFlags":[],"washScore":0';
const FINAL_MIDDLE = `${FINALITY_FIELD}"final"${CLEAN}`;
const PENDING_MIDDLE = `${FINALITY_FIELD}"pending"${CLEAN}`;

/**
 * A sale's answer from its kept JSON (saleJson), whether it is final now and
 * its wash mask: its finality and wash fields put back where the JSON
 * writer places them, before the fees (a sale kept without fees, before
 * migration 31, answers them ""), then its USD price and quantity last;
 * null stays null (no kept answer). A
 * string slice and concatenation here cost V8 no copy, where SQLite's
 * substr counts the text's characters twice per row (bench:serve-ab,
 * docs/benchmarks.md).
 */
export function saleJsonWithFinality(kept: string | null, final: boolean, washMask = 0, priceUsd = "", quantity = "1"): string | null {
  if (kept === null) return null;
  const middle = washMask === 0 ? (final ? FINAL_MIDDLE : PENDING_MIDDLE) : `${FINALITY_FIELD}"${final ? "final" : "pending"}",${washJson(washMask)}`;
  const usd = `${PRICE_USD_FIELD}"${priceUsd}"${QUANTITY_FIELD}"${quantity}"}`;
  // The fees are the kept JSON's last two fields: found from the end, past any text of the fields before them.
  const at = kept.lastIndexOf(FEES_FIELD);
  return at < 0 ? `${kept.slice(0, -1)}${middle}${NO_FEES.slice(0, -1)}${usd}` : `${kept.slice(0, at)}${middle}${kept.slice(at, -1)}${usd}`;
}

/** `"washFlags":[…],"washScore":x`, as the JSON writer writes them. */
function washJson(mask: number): string {
  return `"washFlags":${JSON.stringify(washNames(mask))},"washScore":${washScore(mask)}`;
}

export function saleBinary(r: SaleRow): Uint8Array {
  return bytes(SaleSchema, toSale(r));
}

// Listings: status and lastUpdatedAt follow later sales and transfers.

/** What a listing's record writes: JSON up to lastUpdatedAt's value, from there to status's value, and the binary of every other field. */
export interface ListingFragments {
  jsonHead: string;
  jsonMiddle: string;
  binary: Uint8Array;
}

/** What a listing's JSON ends with after its status, the block and the hash put between (listingJson, wire-rows.ts listingJsonSql). */
export const LISTING_BLOCK_JSON = { block: ',"block":', hash: ',"blockHash":"', end: '"}' } as const;

export function listingFragments(r: Omit<ListingRow, "status" | "lastUpdatedAt">): ListingFragments {
  // Written with lastUpdatedAt 0, no status and no block: binary leaves them out (proto3 defaults), JSON shows where they go.
  const message = { ...toListing({ ...r, lastUpdatedAt: 0, status: "CREATED", block: 0, blockHash: "" }), status: ListingStatus.UNSPECIFIED };
  const text = json.listing(message);
  const first = cutAt(text, "lastUpdatedAt", "0");
  const second = cutAt(first.tail, "status", '"UNSPECIFIED"');
  const { block, hash, end } = LISTING_BLOCK_JSON;
  if (second.tail !== `${block}0${hash}${end}`) throw new Error("fragments: a listing no longer ends with its status, block and blockHash");
  return { jsonHead: first.head, jsonMiddle: second.head, binary: bytes(ListingSchema, message) };
}

/** Each status's name as JSON, as the read puts it in after the middle. */
export const LISTING_STATUS_NAME_JSON: Readonly<Record<ListingStatusName, string>> = Object.fromEntries(
  LISTING_STATUSES.map((s) => [s, JSON.stringify(s)]),
) as Record<ListingStatusName, string>;

/**
 * Each status's JSON as the migrations before 26 put it in, the record's
 * closing brace included (wire-rows.ts listingJsonSqlBefore26: a listing
 * had no block then).
 */
export const LISTING_STATUS_JSON: Readonly<Record<ListingStatusName, string>> = Object.fromEntries(
  LISTING_STATUSES.map((s) => [s, `${LISTING_STATUS_NAME_JSON[s]}}`]),
) as Record<ListingStatusName, string>;

/** A listing's whole JSON from its fragments and what the read puts in (as wire-rows.ts listingJsonSql makes it in SQL). */
export function listingJson(f: Omit<ListingFragments, "binary">, lastUpdatedAt: number, status: ListingStatusName, block: number, blockHash: string): string {
  const { block: b, hash, end } = LISTING_BLOCK_JSON;
  return `${f.jsonHead}${lastUpdatedAt}${f.jsonMiddle}${LISTING_STATUS_NAME_JSON[status]}${b}${block}${hash}${blockHash}${end}`;
}

/** A listing's binary: its stored fields, then lastUpdatedAt (6), status (9), block (10) and blockHash (11) as they are now. */
export function listingBinary(stored: Uint8Array, lastUpdatedAt: number, status: ListingStatusName, block: number, blockHash: string): Uint8Array {
  const w = new BinaryWriter();
  w.raw(stored);
  if (lastUpdatedAt !== 0) w.tag(6, 0).int64(lastUpdatedAt);
  w.tag(9, 0).int32(ListingStatus[status]);
  if (block !== 0) w.tag(10, 0).int64(block);
  if (blockHash !== "") w.tag(11, 2).string(blockHash);
  return w.finish();
}

// Social: a tweet's and an influencer's user is its own row.

/** A user's JSON object, spliced into its tweets and influencers by the read. */
export function socialUserJson(u: SocialUserRow): string {
  return json.user(toSocialUser(u));
}

/** A user's message, length-prefixed: the read puts the field's tag before it (TWEET_USER_TAG, INFLUENCER_USER_TAG). */
export function socialUserBinary(u: SocialUserRow): Uint8Array {
  return new BinaryWriter().bytes(bytes(SocialUserSchema, toSocialUser(u))).finish();
}

/** What a user's record writes: both forms. */
export function socialUserFragments(u: SocialUserRow): { json: string; binary: Uint8Array } {
  return { json: socialUserJson(u), binary: socialUserBinary(u) };
}

/** The tag byte of the user field (wire type 2) in a tweet (field 2) and in an influencer (field 1). */
export const TWEET_USER_TAG = 0x12;
export const INFLUENCER_USER_TAG = 0x0a;

/** What a tweet's or an influencer's record writes: JSON before and after its user, and the binary of every other field. */
export interface SocialFragments {
  jsonHead: string;
  jsonTail: string;
  binary: Uint8Array;
}

function withoutUser(schema: DescMessage, text: string, message: Message): SocialFragments {
  const { head, tail } = cutAt(text, "user", "null");
  return { jsonHead: head, jsonTail: tail, binary: bytes(schema, message) };
}

export function tweetFragments(r: TweetRow): SocialFragments {
  const message = { ...toTweet(r), user: undefined };
  return withoutUser(TweetSchema, json.tweet(message), message);
}

export function influencerFragments(r: Omit<InfluencerRow, "user">): SocialFragments {
  const message = { ...toInfluencer({ ...r, user: PLACEHOLDER_USER }), user: undefined };
  return withoutUser(InfluencerSchema, json.influencer(message), message);
}

const PLACEHOLDER_USER: SocialUserRow = {
  id: "",
  screenName: "",
  profileImageUrl: "",
  description: "",
  name: "",
  location: "",
  followersCount: 0,
  verified: false,
  statusesCount: 0,
  favouritesCount: 0,
  protected: false,
};

// Whole answers of rows read as columns: for a row no write gave its
// fragments (a store's rows written before they were kept, by a tool
// outside the store), and for tests to hold the fragments against.

export function saleFragment(r: SaleRow, form: WireForm): Fragment {
  // Its whole answer, finality included (saleJson is the kept part).
  return form === "json" ? json.sale(toSale(r)) : saleBinary(r);
}

export function listingFragment(r: ListingRow, form: WireForm): Fragment {
  const message = toListing(r);
  return form === "json" ? json.listing(message) : bytes(ListingSchema, message);
}

export function influencerFragment(r: InfluencerRow, form: WireForm): Fragment {
  const message = toInfluencer(r);
  return form === "json" ? json.influencer(message) : bytes(InfluencerSchema, message);
}

export function tweetFragment(r: TweetRow, form: WireForm): Fragment {
  const message = toTweet(r);
  return form === "json" ? json.tweet(message) : bytes(TweetSchema, message);
}

// The read side: a page's fragments into the envelope the codec wrote.

const WIRE_ROWS = Symbol("wireRows");

/** A list answer whose repeated field is given as ready fragments of one form. */
interface WireRows {
  /** The repeated field's number and /v1 JSON name. */
  field: { number: number; jsonName: string };
  form: WireForm;
  rows: Fragment[];
}

/**
 * `message` (its list field left empty) with the page's fragments to put in
 * that field when it is written: the codec of the same form splices them
 * (spliceJson, spliceBinary). Any other writer sees the empty list, so a
 * codec of another form must not be handed such a message (the service
 * reads fragments only for the form its caller named).
 */
export function withWireRows<M extends Message>(message: M, field: { number: number; jsonName: string }, form: WireForm, rows: Fragment[]): M {
  (message as unknown as Record<symbol, WireRows>)[WIRE_ROWS] = { field, form, rows };
  return message;
}

function wireRows(message: Message, form: WireForm): WireRows | undefined {
  const rows = (message as unknown as Record<symbol, WireRows | undefined>)[WIRE_ROWS];
  if (rows !== undefined && rows.form !== form) throw new Error(`a ${rows.form} page handed to the ${form} writer`);
  return rows;
}

/** The /v1 JSON of `message` as `write` wrote it, with its ready rows put in their (empty) array. */
export function spliceJson(message: Message, text: string): string {
  const rows = wireRows(message, "json");
  if (rows === undefined || rows.rows.length === 0) return text;
  const marker = `${JSON.stringify(rows.field.jsonName)}:[]`;
  // The envelope's other fields are scalars and strings, where a raw marker cannot occur.
  const at = text.indexOf(marker);
  if (at < 0) throw new Error(`fragments: ${marker} not found`);
  const open = at + marker.length - 1;
  return `${text.slice(0, open)}${(rows.rows as string[]).join(",")}${text.slice(open)}`;
}

/** The binary of `message` as toBinary wrote it, with its ready rows appended as elements of their field. */
export function spliceBinary(message: Message, encoded: Uint8Array): Uint8Array {
  const rows = wireRows(message, "binary");
  if (rows === undefined || rows.rows.length === 0) return encoded;
  const w = new BinaryWriter();
  w.raw(encoded);
  for (const row of rows.rows as Uint8Array[]) w.tag(rows.field.number, 2).bytes(row);
  return w.finish();
}
