import { comparedColumns, FED_AT } from "../shared/token-feed.js";
import { nowSeconds } from "../../domain/formats.js";
import { COLLECTION_METADATA_COLUMNS, type CollectionMetadata, collectionMetadataValues, TOKEN_METADATA_COLUMNS, type TokenMetadata, tokenMetadataValues } from "../shared/metadata.js";
import { movesFlaggedInWei } from "../shared/wash-scope.js";
import { finalizedRemoval } from "../shared/conflicts.js";
import { type RemovedSale, SqliteRemovals } from "./reorgs.js";
import { SqliteWash } from "./wash.js";
import { WashScope } from "../shared/wash-scope.js";
import { SqliteOrderLog } from "./order-reorgs.js";
import type { OrderKind } from "../shared/order-log.js";
import { collectionRef, describeRef, recordRef, refParts } from "../../domain/chains.js";
import { refSql } from "../shared/collection-ref.js";
import type { Statement } from "better-sqlite3";
import type { Db } from "./db.js";
import type { AppraisalRow, ListingRow, OfferRow, RarityRow, SaleRow, ScoreRow, SocialUserRow, TransferRow, TweetRow } from "../../domain/rows.js";
import { assetKey } from "./asset-key.js";
import { LAPSE_DUE, SALE_LISTINGS_MOVED } from "./fillable.js";
import { deferMarketTriggers } from "./market-triggers.js";
import { SqliteFloorHistory } from "./floor-history.js";
import { SALE_OWNER_ADDED } from "./ownership.js";
import { hexToBytes } from "./hex.js";
import { splitWei } from "./wei.js";
import { SalesAggregates } from "./sales-stats.js";
import { stampVersions, TouchedCollections } from "./data-versions.js";
import { listingMoved } from "../shared/conflicts.js";
import { influencerFragments, listingFragments, listingJson, saleJson, socialUserFragments, tweetFragments } from "../../domain/wire/fragments.js";
import { CURRENCY } from "../../domain/wire/messages.js";

// Write side of the store: one upsert per record kind, keyed by the natural
// keys of decisions.md. Each kind is described by a table spec; the SQL is
// derived from it, so the kinds differ only in how a record maps to columns.

export type UpsertResult = "inserted" | "updated" | "unchanged";

/** Where an appraisal or rarity row came from: an operator's import, or `derive`. */
export type Provenance = "imported" | "derived";

/** A row's columns by name. */
export type Columns = Record<string, unknown>;

/** A table upserts write by natural key (a kind's engine statements: kind-writes.ts). */
export interface TableSpec {
  table: string;
  /** Natural key columns. */
  key: readonly string[];
  /** Every other column. */
  values: readonly string[];
  /** The rows are in a live feed: an insert or a change sets feed_seq to the next position (migration 6). */
  feed?: true;
  /** Columns an insert sets from a value column ([column, value column]) and an update leaves to the triggers. */
  insertAlso?: readonly (readonly [string, string])[];
  /** A changed row may change any collection's answers (a price point reprices every sale of its minutes: docs/money.md). */
  touchesAll?: true;
}

interface Upserter {
  insert: Statement;
  update: Statement;
  spec: TableSpec;
  /** How many of the value columns (the first ones) an update compares: the ready answers (wire_*) follow from the rest. */
  compared: number;
}

/** A statement cache's name for a spec: its table and columns. */
const upserterId = (spec: TableSpec) => `${spec.table}(${spec.values.join(",")})`;

/** A collection record as its declaration checked it (domain/kinds/collections.ts). */
export interface CollectionRecord extends Partial<CollectionMetadata> {
  contractAddress: string;
  name: string;
  /** "ERC721" (or absent) or "ERC1155". */
  tokenStandard?: string;
}

/** A token record as its declaration checked it (domain/kinds/tokens.ts): its attributes and OpenSea metadata. */
export interface TokenRecord extends Partial<TokenMetadata> {
  contractAddress: string;
  assetId: string;
  currentOwner: string;
  attributes: readonly { trait_type: string; value: unknown; display_type?: string }[];
}

/** The built-in kinds' tables (and social users', which influencers and tweets write). */
export const TABLES = {
  // The record's owner: the token's owner until a sale or transfer moves it (ownership.ts).
  // A new row's owner is its record's, set by the insert itself: a trigger
  // setting it after the insert would race the holders' triggers, whose
  // order SQLite does not promise.
  token: {
    table: "tokens",
    key: ["collection_id", "asset_key"],
    values: ["record_owner", "attributes", "recorded", ...TOKEN_METADATA_COLUMNS, FED_AT],
    insertAlso: [["current_owner", "record_owner"]],
    // A record written is an event (migration 39: shared/token-feed.ts).
    feed: true,
  },
  appraisal: {
    table: "appraisals",
    key: ["collection_id", "asset_key"],
    values: ["fair_market_value", "confidence", "source"],
  },
  rarity: {
    table: "rarity",
    key: ["collection_id", "asset_key"],
    values: ["current_owner", "rarity_score", "statistical_rarity", "rarity_rank", "source"],
  },
  sale: {
    table: "sales",
    key: ["hash", "collection_id", "asset_key"],
    // Its /v1 JSON only: a binary page is encoded from the columns (decisions.md, "A sale keeps its JSON only").
    values: ["seller", "buyer", "timestamp", "block", "price", "amount_received", "price_hi", "price_lo", "marketplace", "block_hash", "currency", "marketplace_fee", "royalty_fee", "quantity", "wire_json"],
    feed: true,
  },
  transfer: {
    table: "transfers",
    key: ["hash", "log_index", "collection_id", "asset_key"],
    values: ["sender", "recipient", "timestamp", "block", "block_hash", "amount"],
    feed: true,
  },
  // What the listing's records said: the answer (status, last_updated_at)
  // follows it unless the token moved since (fillable.ts), set at insert as
  // the token's owner is.
  listing: {
    table: "listings",
    key: ["marketplace", "marketplace_id"],
    values: ["collection_id", "asset_key", "created_at", "record_updated_at", "price", "currency", "maker", "expires_at", "quantity", "record_status", "block", "block_hash",
      "wire_json_head", "wire_json_middle", "wire_pb"],
    // wire_json: the whole answer as inserted; a trigger keeps it as the answer moves (wire-rows.ts).
    insertAlso: [["last_updated_at", "record_updated_at"], ["status", "record_status"], ["wire_json", "wire_json_inserted"]],
    feed: true,
  },
  offer: {
    table: "offers",
    key: ["marketplace", "marketplace_id"],
    values: ["collection_id", "asset_key", "trait_type", "trait_value", "maker", "price", "currency", "created_at", "last_updated_at", "expires_at", "status", "block", "block_hash"],
    feed: true,
  },
  socialUser: {
    table: "social_users",
    key: ["id"],
    values: [
      "screen_name", "profile_image_url", "description", "name", "location", "followers_count",
      "verified", "statuses_count", "favourites_count", "protected", "wire_json", "wire_pb",
    ],
  },
  influencer: { table: "influencers", key: ["collection_id", "user_id"], values: ["score", "wire_json_head", "wire_json_tail", "wire_pb"] },
  tweet: {
    table: "tweets",
    key: ["collection_id", "id"],
    values: [
      "user_id", "source", "text", "retweet_count", "favorite_count", "possibly_sensitive", "lang",
      "retweeted_status", "created_at", "date", "original_id", "original_text", "original_tweet", "interaction",
      "wire_json_head", "wire_json_tail", "wire_pb",
    ],
  },
  score: { table: "scores", key: ["collection_id"], values: ["hype", "gains", "community", "total"] },
  collection: { table: "collections", key: ["chain", "address"], values: ["name", ...COLLECTION_METADATA_COLUMNS, "token_standard"] },
  // A score's name names its collection, leaving its metadata as it is.
  collectionName: { table: "collections", key: ["chain", "address"], values: ["name"] },
  reorg: { table: "reorgs", key: ["chain", "from_block"], values: ["block_hashes"] },
  pricePoint: { table: "price_points", key: ["currency", "minute"], values: ["usd"], touchesAll: true },
} satisfies Record<string, TableSpec>;

/** The order kinds' tables. */
const ORDER_TABLES: Readonly<Record<OrderKind, TableSpec>> = { listings: TABLES.listing, offers: TABLES.offer };

export type SocialUserRecord = SocialUserRow;

/** A tweet row plus the collection it relates to. */
export interface TweetRecord extends TweetRow {
  contractAddress: string;
}

/**
 * The collection a record names (domain/chains.ts collectionRef): a checked
 * record's chain and address; a row without a chain (the derive's) names
 * its collection by reference already.
 */
export function refOf(r: { contractAddress: string }): string {
  return (r as { chain?: string }).chain === undefined ? r.contractAddress : recordRef(r);
}

/** A block hash as stored: its bytes, NULL for none. */
const blockHashBytes = (h: string | undefined): Uint8Array | null => (h === undefined || h === "" ? null : hexToBytes(h));

export class WriteStore {
  readonly #db: Db;
  /** By table. */
  readonly #upserters = new Map<string, Upserter>();
  readonly #collectionIds = new Map<string, number>();
  readonly #insertCollection: Statement;
  readonly #selectCollection: Statement;
  readonly #saleBefore: Statement;
  /** The collection holding a listing or an offer, by table, prepared at first use. */
  readonly #holders = new Map<"listings" | "offers", Statement>();
  readonly #aggregates: SalesAggregates;
  readonly #removals: SqliteRemovals;
  readonly #orders: SqliteOrderLog;
  readonly #maintainStats: boolean;
  /** The sales written, changed or taken back since the last commit, whose neighbours' wash flags are evaluated before it (wash.ts). */
  readonly #washMarks = new WashScope();
  readonly #wash: SqliteWash;
  /** The largest sale rowid when this transaction wrote its first sale: a larger one it inserted (read once per transaction). */
  #salesBefore: number | undefined;
  #maxSaleId: Statement | undefined;
  /** The collections reorganisations changed since takeReorganised (a reorganisation names none: the ingest writer reports them). */
  readonly #reorganised = new Set<number>();
  /** The collections changed since the last commit (stamped by beforeCommit). */
  readonly #touched = new TouchedCollections();
  /**
   * The last feed position this transaction gave a row: read from
   * store_state at the first feed row, written back by beforeCommit. The
   * write lock (BEGIN IMMEDIATE) is held from that read to the commit, so
   * positions grow in commit order across every writer of the file.
   */
  #feedSeq: number | undefined;
  #refeedListings: Statement | undefined;
  /** A sale's hash by id: a sale cleared of its flags enters the series with it (their first and last sale name it). */
  #saleHash: Statement | undefined;
  #pointBefore: Statement | undefined;
  /** A sale's owner and listings statements (SALE_OWNER_ADDED, SALE_LISTINGS_MOVED), prepared at the first sale. */
  #saleMoves: Statement[] | undefined;
  /** In bulk mode the market is recomputed at the end (market-triggers.ts), not row by row. */
  #marketDeferred = false;
  /** Whether a bulk import has dropped the indexes it builds at its end (deferIndexes). */
  #indexesDeferred = false;
  /** The row id of the last row #upsert inserted. */
  #insertedId = 0;
  #listingFeedSeq: Statement | undefined;
  /** The listings coming due (fillable.ts LAPSE_DUE), and an id put among those fed again. */
  #lapseDue: Statement | undefined;
  #refed: Statement | undefined;
  /** The floor history's bookkeeping (floor-history.ts), settled with each commit. */
  readonly #floors: SqliteFloorHistory;
  #knowMarketplace: Statement | undefined;

  /**
   * maintainStats: false leaves the stats aggregates stale (until `stats
   * rebuild`); it exists only to measure what maintaining them costs.
   */
  constructor(db: Db, options: { maintainStats?: boolean } = {}) {
    this.#db = db;
    this.#maintainStats = options.maintainStats ?? true;
    this.#insertCollection = db.prepare("INSERT OR IGNORE INTO collections (chain, address) VALUES (?, ?)");
    this.#selectCollection = db.prepare("SELECT id FROM collections WHERE chain = ? AND address = ?");
    this.#saleBefore = db
      .prepare("SELECT marketplace, timestamp FROM sales WHERE hash = ? AND collection_id = ? AND asset_key = ?")
      .raw();
    this.#aggregates = new SalesAggregates(db);
    this.#wash = new SqliteWash(db);
    this.#floors = new SqliteFloorHistory(db);
    this.#removals = new SqliteRemovals(db, () => this.#nextFeedSeq());
    // A replayed order is upserted as any record is: a new feed position when it changed, its triggers.
    const recorded = (spec: TableSpec) => spec.values.filter((c) => !c.startsWith("wire_"));
    this.#orders = new SqliteOrderLog(db, { listings: recorded(TABLES.listing), offers: recorded(TABLES.offer) }, () => this.#nextFeedSeq(),
      (kind, r) => void this.#upsert(ORDER_TABLES[kind], kind === "listings" ? this.#listingColumns(r as ListingRow) : this.#offerColumns(r as OfferRow)));
  }

  /**
   * Runs fn in one transaction: all of its writes land, or none, and the
   * stats aggregates they affect are brought up to date before it commits.
   */
  transaction<T>(fn: () => T): T {
    const nested = this.#db.inTransaction;
    try {
      return this.#db
        .transaction(() => {
          const result = fn();
          if (!nested) this.beforeCommit();
          return result;
        })
        .immediate();
    } catch (err) {
      // Rows added inside were rolled back; their additions cannot be trusted.
      if (nested) this.#aggregates.distrustAdded();
      else {
        this.#feedSeq = undefined;
        this.#washMarks.clear();
        this.#touched.distrustFlips();
        this.#salesBefore = undefined;
      }
      throw err;
    }
  }

  /**
   * Brings the stats aggregates up to date with the sales written so far,
   * and stamps the collections written with the next data version
   * (data-versions.ts). Whoever commits a transaction this store wrote in
   * calls this first (transaction(), the importer and group commit do).
   */
  beforeCommit(): void {
    // Wash flags first: the aggregates will leave flagged sales out.
    if (this.#washMarks.pending) {
      // A sale flagged or cleared moves out of or into the aggregates, exactly: one this transaction inserted (a
      // rowid past those it began with) and a rule flags is taken back out of what it added; one stored before
      // leaves them or enters them as a sale would. Only a sale this transaction inserted and cleared again has its
      // hour and intervals summed again.
      const inserted = (id: number) => this.#salesBefore !== undefined && id > this.#salesBefore;
      for (const c of this.#washMarks.changedCollections()) this.#touched.washed.add(c);
      this.#wash.evaluate(this.#washMarks.take(), (c, sale, mask) => {
        const flagged = mask !== 0;
        if (movesFlaggedInWei(sale.mask, mask)) this.#touched.flipped(c, { timestamp: sale.timestamp, price: sale.price, sign: flagged ? 1 : -1 });
        if (this.#maintainStats) {
          // Its hash and token (its dollars are its price at its token's point in force).
          const stored = () => (this.#saleHash ??= this.#db.prepare("SELECT hash, currency FROM sales WHERE id = ?").raw()).get(sale.id) as [Buffer, string];
          if (flagged) {
            const [, currency] = stored();
            if (inserted(sale.id)) this.#aggregates.unadd(c, sale.marketplace, sale, currency);
            else this.#aggregates.leave(c, sale.marketplace, sale, currency);
          } else if (!inserted(sale.id)) {
            const [hashBytes, currency] = stored();
            const hash = `0x${hashBytes.toString("hex")}`;
            // Cleared: it enters the aggregates as a new sale does.
            this.#aggregates.add(c, sale.marketplace, { timestamp: sale.timestamp, block: sale.block, hash, assetId: sale.assetId, price: sale.price }, currency);
          } else this.#aggregates.touch(c, sale.marketplace, sale.timestamp);
        }
        this.#touched.add(c);
      }, this.#salesBefore);
    }
    this.#salesBefore = undefined;
    if (this.#aggregates.pending) this.#aggregates.flush();
    // Listings past their expiry lapse with this commit (shared/listing-orders.ts), as ended ones are fed again.
    this.#lapseDue ??= this.#db.prepare(LAPSE_DUE).raw();
    for (const [id, collectionId] of this.#lapseDue.all(nowSeconds()) as [number, number][]) {
      (this.#refed ??= this.#db.prepare("INSERT OR IGNORE INTO listings_refed VALUES (?)")).run(id);
      this.#touched.add(collectionId);
    }
    // Listings a sale or transfer ended (fillable.ts) take their feed positions now.
    this.#refeedListings ??= this.#db.prepare("DELETE FROM listings_refed RETURNING id").pluck();
    for (const id of this.#refeedListings.all() as number[]) {
      this.#listingFeedSeq ??= this.#db.prepare("UPDATE listings SET feed_seq = ? WHERE id = ?");
      this.#listingFeedSeq.run(this.#nextFeedSeq(), id);
    }
    if (this.#feedSeq !== undefined) {
      this.#db.prepare("UPDATE store_state SET feed_seq = ? WHERE id = 1").run(this.#feedSeq);
      this.#feedSeq = undefined;
    }
    // What changed the floor (spans written or removed, tokens flagged) is kept in its history with this commit.
    this.#floors.settle();
    stampVersions(this.#db, this.#touched);
  }

  /** The next feed position (see #feedSeq); positions a rolled-back row took are skipped, never reused out of order. */
  #nextFeedSeq(): number {
    this.#feedSeq ??= this.#db.prepare("SELECT feed_seq FROM store_state WHERE id = 1").pluck().get() as number;
    return ++this.#feedSeq;
  }

  /** Marks a collection changed by a write made outside the upserts (derive's deletes). */
  touch(collectionId: number): void {
    this.#touched.add(collectionId);
  }

  /** The id of a collection (domain/chains.ts collectionRef), registering it on first sight. */
  collectionId(ref: string): number {
    let id = this.#collectionIds.get(ref);
    if (id === undefined) {
      const { chain, address } = refParts(ref);
      this.#insertCollection.run(chain, address);
      id = (this.#selectCollection.get(chain, address) as { id: number }).id;
      this.#collectionIds.set(ref, id);
    }
    return id;
  }

  /** The id of the collection a record names (its chain and address: refOf). */
  collectionOf(r: { contractAddress: string }): number {
    return this.collectionId(refOf(r));
  }

  upsertCollection(r: CollectionRecord): UpsertResult {
    const { chain, address } = refParts(refOf(r));
    const row: Columns = { chain, address, name: r.name, token_standard: r.tokenStandard ?? "ERC721" };
    collectionMetadataValues(r).forEach((v, i) => (row[COLLECTION_METADATA_COLUMNS[i]!] = v));
    return this.#upsert(TABLES.collection, row);
  }

  upsertToken(r: TokenRecord): UpsertResult {
    const row: Columns = {
      collection_id: this.collectionOf(r),
      asset_key: assetKey(r.assetId),
      record_owner: r.currentOwner,
      attributes: JSON.stringify(r.attributes),
      recorded: 1,
      [FED_AT]: nowSeconds(),
    };
    tokenMetadataValues(r).forEach((v, i) => (row[TOKEN_METADATA_COLUMNS[i]!] = v));
    return this.#upsert(TABLES.token, row);
  }

  /** A transfer: it moves its token's owner when it is the latest (triggers, ownership.ts), and its units between balances (balances.ts). */
  upsertTransfer(r: TransferRow): UpsertResult {
    return this.#upsert(TABLES.transfer, {
      hash: hexToBytes(r.hash),
      log_index: r.logIndex,
      collection_id: this.collectionOf(r),
      asset_key: assetKey(r.assetId),
      sender: hexToBytes(r.from),
      recipient: hexToBytes(r.to),
      timestamp: r.timestamp,
      block: r.block,
      block_hash: blockHashBytes(r.blockHash),
      amount: Number(r.amount ?? "1"),
    });
  }

  /** An offer: its latest record replaces the earlier one, under the collection that holds it (offers.ts keeps the top bids' reads). */
  upsertOffer(r: OfferRow): UpsertResult {
    return this.#orderWritten("offers", r, this.#offerColumns(r));
  }

  #offerColumns(r: OfferRow): Columns {
    return {
      marketplace: r.marketplace,
      marketplace_id: r.marketplaceId,
      collection_id: this.collectionOf(r),
      asset_key: r.assetId === "" ? "" : assetKey(r.assetId),
      trait_type: r.traitType,
      trait_value: r.traitValue,
      maker: r.maker.toLowerCase(),
      price: r.price,
      currency: r.currency ?? CURRENCY,
      created_at: r.createdAt,
      last_updated_at: r.lastUpdatedAt,
      expires_at: r.expiresAt,
      status: r.status,
      block: r.block ?? 0,
      block_hash: blockHashBytes(r.blockHash),
    };
  }

  /**
   * An order's record upserted, and logged when it may be taken back
   * (order-reorgs.ts): on-chain above its chain's finalized block, or of an
   * order that keeps a log; the order's row before it kept as the log's
   * base when its log begins here (just before the update: a new order has none).
   */
  #orderWritten(kind: OrderKind, r: { marketplace: string; marketplaceId: string; contractAddress: string }, row: Columns): UpsertResult {
    const logged = this.#orders.logged(kind, row);
    const block = row.block as number;
    const chain = logged || block > 0 ? refParts(refOf(r)).chain : "";
    if (!logged && (block <= 0 || block <= this.#removals.finalized(chain))) return this.#upsert(ORDER_TABLES[kind], row, () => this.#refuseMoved(kind, r));
    const result = this.#upsert(ORDER_TABLES[kind], row, () => {
      this.#refuseMoved(kind, r);
      if (!logged) this.#orders.base(kind, row, chain);
    });
    this.#orders.append(kind, row, chain);
    return result;
  }

  /**
   * Takes back an order's records of one block (a record sent again with
   * removed: true: docs/chains.md, "Orders taken back"): "updated" when its
   * order's log held one. (An off-chain record, block 0, is refused by its
   * declaration: parts.ts removalNamesBlock.)
   */
  removeOrder(kind: OrderKind, r: ListingRow | OfferRow): UpsertResult {
    if (!this.#db.inTransaction) return this.transaction(() => this.removeOrder(kind, r));
    const block = r.block ?? 0;
    this.#refuseFinal(r, block, `${kind === "listings" ? "listing" : "offer"} ${r.marketplace} ${r.marketplaceId} (block ${block})`);
    const collection = this.#orders.record(kind, r.marketplace, r.marketplaceId, block, blockHashBytes(r.blockHash));
    if (collection === undefined) return "unchanged";
    this.#touched.add(collection);
    return "updated";
  }

  /**
   * Imported rows (the default) insert or overwrite; a derived row with
   * `keepExisting` never replaces a row already there (derive-store.ts:
   * imported rows win over derived ones) and reports it "unchanged".
   */
  upsertAppraisal(r: AppraisalRow, source: Provenance = "imported", keepExisting = false): UpsertResult {
    return this.#upsert(TABLES.appraisal,
      {
        collection_id: this.collectionOf(r),
        asset_key: assetKey(r.assetId),
        fair_market_value: r.fairMarketValue,
        confidence: r.confidence,
        source,
      },
      undefined,
      keepExisting,
    );
  }

  upsertRarity(r: RarityRow, source: Provenance = "imported", keepExisting = false): UpsertResult {
    return this.#upsert(TABLES.rarity,
      {
        collection_id: this.collectionOf(r),
        asset_key: assetKey(r.assetId),
        current_owner: r.currentOwner,
        rarity_score: r.rarityScore,
        statistical_rarity: r.statisticalRarity,
        rarity_rank: r.rarityRank,
        source,
      },
      undefined,
      keepExisting,
    );
  }

  /**
   * Upserts a sale and marks the stats hours it lands in (and, for a changed
   * sale, the hour it left). Outside a transaction it opens one, so the row
   * and the aggregates always commit together.
   */
  upsertSale(r: SaleRow): UpsertResult {
    if (!this.#db.inTransaction) return this.transaction(() => this.upsertSale(r));
    const price = BigInt(r.price);
    const { hi, lo } = splitWei(price);
    const hash = hexToBytes(r.hash);
    const collectionId = this.collectionOf(r);
    const key = assetKey(r.assetId);
    this.#salesBefore ??= (this.#maxSaleId ??= this.#db.prepare("SELECT coalesce(max(id), 0) FROM sales").pluck()).get() as number;
    let before: [string, number] | undefined;
    const row = {
      hash,
      collection_id: collectionId,
      asset_key: key,
      seller: hexToBytes(r.from),
      buyer: hexToBytes(r.to),
      timestamp: r.timestamp,
      block: r.block,
      price: r.price,
      amount_received: r.amountReceived,
      price_hi: hi,
      price_lo: lo,
      marketplace: r.marketplace,
      block_hash: blockHashBytes(r.blockHash),
      currency: r.currency ?? CURRENCY,
      marketplace_fee: r.marketplaceFee ?? "",
      royalty_fee: r.royaltyFee ?? "",
      quantity: Number(r.quantity ?? "1"),
      wire_json: saleJson(r),
    };
    const result = this.#upsert(TABLES.sale, row, () => {
      before = this.#saleBefore.get(hash, collectionId, key) as [string, number];
    });
    // Its marketplace known (migration 18): here rather than by a trigger, which would slow every insert.
    if (result === "inserted") (this.#knowMarketplace ??= this.#db.prepare("INSERT OR IGNORE INTO marketplaces VALUES (?)")).run(r.marketplace);
    if (result === "inserted" && !this.#marketDeferred) {
      this.#saleMoves ??= [...SALE_OWNER_ADDED, ...SALE_LISTINGS_MOVED].map((sql) => this.#db.prepare(sql));
      const at = { collection_id: collectionId, asset_key: key, buyer: row.buyer, block: r.block, hash, timestamp: r.timestamp };
      for (const s of this.#saleMoves) s.run(at);
    }
    // A bulk import's indexes are built after it (deferIndexes), and its marks read wide (wash-scope.ts readsWide): not asked.
    if (result === "inserted") {
      const alone = this.#indexesDeferred ? undefined : this.#wash.alone(collectionId, key, { id: this.#insertedId, timestamp: r.timestamp, buyer: row.buyer });
      this.#washMarks.mark(collectionId, r.assetId, r.timestamp, true, alone);
    }
    else if (result === "updated") {
      this.#washMarks.mark(collectionId, r.assetId, before![1]);
      this.#washMarks.mark(collectionId, r.assetId, r.timestamp);
    }
    if (this.#maintainStats) {
      if (result === "inserted") {
        this.#aggregates.add(collectionId, r.marketplace, {
          timestamp: r.timestamp, block: r.block, hash: r.hash, assetId: r.assetId, price,
        }, row.currency);
      }
      else if (result === "updated") {
        this.#aggregates.touch(collectionId, before![0], before![1]);
        this.#aggregates.touch(collectionId, r.marketplace, r.timestamp);
      }
    }
    return result;
  }

  upsertListing(r: ListingRow): UpsertResult {
    return this.#orderWritten("listings", r, this.#listingColumns(r));
  }

  #listingColumns(r: ListingRow): Columns {
    const wire = listingFragments(r);
    return {
      marketplace: r.marketplace,
      marketplace_id: r.marketplaceId,
      collection_id: this.collectionOf(r),
      asset_key: assetKey(r.assetId),
      created_at: r.createdAt,
      record_updated_at: r.lastUpdatedAt,
      price: r.price,
      currency: r.currency ?? CURRENCY,
      // Lower-case already (the kind's check): the ready answer above is made from the same value.
      maker: r.maker ?? "",
      expires_at: r.expiresAt ?? 0,
      quantity: Number(r.quantity ?? "1"),
      record_status: r.status,
      block: r.block ?? 0,
      block_hash: blockHashBytes(r.blockHash),
      wire_json_head: wire.jsonHead,
      wire_json_middle: wire.jsonMiddle,
      wire_pb: wire.binary,
      wire_json_inserted: listingJson(wire, r.lastUpdatedAt, r.status, r.block ?? 0, r.blockHash ?? ""),
    };
  }

  /**
   * Takes a sale back (a reorganisation: docs/chains.md): the row of its
   * natural key is deleted, its hours and series recomputed, its token's
   * owner and listings found again (reorgs.ts). "updated" when it was held.
   */
  removeSale(r: SaleRow): UpsertResult {
    if (!this.#db.inTransaction) return this.transaction(() => this.removeSale(r));
    this.#refuseFinal(r, r.block, `sale ${r.hash} of token ${r.assetId}`);
    const collectionId = this.#knownCollection(r);
    const removed = collectionId === undefined ? undefined : this.#removals.sale(hexToBytes(r.hash), collectionId, assetKey(r.assetId));
    if (removed === undefined) return "unchanged";
    this.#saleRemoved(removed);
    return "updated";
  }

  /** Takes a transfer back, as removeSale a sale. */
  removeTransfer(r: TransferRow): UpsertResult {
    if (!this.#db.inTransaction) return this.transaction(() => this.removeTransfer(r));
    this.#refuseFinal(r, r.block, `transfer ${r.hash} (log ${r.logIndex}) of token ${r.assetId}`);
    const collectionId = this.#knownCollection(r);
    const removed = collectionId === undefined ? undefined : this.#removals.transfer(hexToBytes(r.hash), r.logIndex, collectionId, assetKey(r.assetId));
    if (removed === undefined) return "unchanged";
    this.#touched.add(removed);
    return "updated";
  }

  /**
   * A reorganisation: every sale and transfer of the chain from its block
   * on (of its named blocks only) taken back, and the reorganisation kept
   * by its natural key (chain, first block), counted as any record is.
   */
  removeBlocks(r: { chain: string; fromBlock: number; blockHashes: readonly string[] }): UpsertResult {
    if (!this.#db.inTransaction) return this.transaction(() => this.removeBlocks(r));
    const finalized = this.#removals.finalized(r.chain);
    if (r.fromBlock <= finalized) throw finalizedRemoval(r.chain, r.fromBlock, finalized, `the reorganisation from block ${r.fromBlock}`);
    const { sales, transfers } = this.#removals.blocks(r.chain, r.fromBlock, r.blockHashes);
    for (const s of sales) this.#saleRemoved(s);
    const changed = [...sales.map((s) => s.collectionId), ...transfers, ...this.#orders.blocks(r.chain, r.fromBlock, r.blockHashes)];
    for (const c of changed) {
      this.#touched.add(c);
      this.#reorganised.add(c);
    }
    return this.#upsert(TABLES.reorg, { chain: r.chain, from_block: r.fromBlock, block_hashes: JSON.stringify(r.blockHashes) });
  }

  /** The collections the reorganisations written since the last call changed (references), forgotten here. */
  takeReorganised(): string[] {
    if (this.#reorganised.size === 0) return [];
    const ids = [...this.#reorganised];
    this.#reorganised.clear();
    return this.#db.prepare(`SELECT ${refSql("c")} FROM collections c WHERE c.id IN (SELECT value FROM json_each(?))`).pluck().all(JSON.stringify(ids)) as string[];
  }

  /** A chain's blocks up to its finalized one are final (docs/chains.md, "Finality"). */
  finalize(r: { chain: string; block: number }): UpsertResult {
    const result = this.#removals.finalize(r.chain, r.block);
    if (result !== "unchanged") this.#orders.pruned(r.chain, r.block);
    // Every record of the chain may answer another finality: what the servers remember of any collection is forgotten.
    if (result !== "unchanged") this.#touched.all = true;
    return result;
  }

  /** Refuses the removal of a record in a final block. */
  #refuseFinal(r: { contractAddress: string }, block: number, what: string): void {
    const { chain } = refParts(refOf(r));
    const finalized = this.#removals.finalized(chain);
    if (block <= finalized) throw finalizedRemoval(chain, block, finalized, what);
  }

  #saleRemoved(s: RemovedSale): void {
    this.#touched.add(s.collectionId);
    this.#washMarks.mark(s.collectionId, s.assetId, s.timestamp);
    if (this.#maintainStats) this.#aggregates.touch(s.collectionId, s.marketplace, s.timestamp);
  }

  /** The id of the collection a record names, without registering it (nothing of an unknown collection can be taken back). */
  #knownCollection(r: { contractAddress: string }): number | undefined {
    const ref = refOf(r);
    const known = this.#collectionIds.get(ref);
    if (known !== undefined) return known;
    const { chain, address } = refParts(ref);
    return (this.#selectCollection.get(chain, address) as { id: number } | undefined)?.id;
  }

  /**
   * A listing (or an offer) stays with its collection, its history, floors
   * and feed being that collection's: a record naming one held by another
   * collection is refused. Asked only when the record's key is already held
   * (before an update), so an insert reads nothing more.
   */
  #refuseMoved(table: OrderKind, r: { marketplace: string; marketplaceId: string; contractAddress: string }): void {
    let holder = this.#holders.get(table);
    if (holder === undefined) {
      holder = this.#db
        .prepare(`SELECT ${refSql()} FROM ${table} x JOIN collections c ON c.id = x.collection_id WHERE x.marketplace = ? AND x.marketplace_id = ?`)
        .pluck();
      this.#holders.set(table, holder);
    }
    const held = holder.get(r.marketplace, r.marketplaceId) as string | undefined;
    const named = refOf(r);
    if (held !== undefined && held !== named) {
      throw listingMoved(r.marketplace, r.marketplaceId, describeRef(held), describeRef(named), table === "offers" ? "offer" : "listing");
    }
  }

  upsertSocialUser(u: SocialUserRecord): UpsertResult {
    const wire = socialUserFragments(u);
    return this.#upsert(TABLES.socialUser, {
      id: u.id,
      screen_name: u.screenName,
      profile_image_url: u.profileImageUrl,
      description: u.description,
      name: u.name,
      location: u.location,
      followers_count: u.followersCount,
      verified: u.verified ? 1 : 0,
      statuses_count: u.statusesCount,
      favourites_count: u.favouritesCount,
      protected: u.protected ? 1 : 0,
      wire_json: wire.json,
      wire_pb: wire.binary,
    });
  }

  upsertInfluencer(r: { contractAddress: string; user: SocialUserRecord; score: number }): UpsertResult {
    this.upsertSocialUser(r.user);
    const wire = influencerFragments(r);
    return this.#upsert(TABLES.influencer, {
      collection_id: this.collectionOf(r),
      user_id: r.user.id,
      score: r.score,
      wire_json_head: wire.jsonHead,
      wire_json_tail: wire.jsonTail,
      wire_pb: wire.binary,
    });
  }

  upsertTweet(r: TweetRecord): UpsertResult {
    this.upsertSocialUser(r.user);
    const wire = tweetFragments(r);
    return this.#upsert(TABLES.tweet, {
      collection_id: this.collectionOf(r),
      id: r.id,
      user_id: r.user.id,
      source: r.source,
      text: r.text,
      retweet_count: r.retweetCount,
      favorite_count: r.favoriteCount,
      possibly_sensitive: r.possiblySensitive ? 1 : 0,
      lang: r.lang,
      retweeted_status: r.retweetedStatusJson,
      created_at: r.createdAt,
      date: r.date,
      original_id: r.originalId,
      original_text: r.originalText,
      original_tweet: r.originalTweet ? 1 : 0,
      interaction: r.interaction,
      wire_json_head: wire.jsonHead,
      wire_json_tail: wire.jsonTail,
      wire_pb: wire.binary,
    });
  }

  /**
   * A token's USD price at a minute (docs/money.md): the sales it now prices
   * move their dollars in the series (SalesAggregates.repriced), and their
   * collections' summaries are kept again.
   */
  upsertPricePoint(r: { currency: string; minute: number; usd: string }): UpsertResult {
    const before = ((this.#pointBefore ??= this.#db.prepare("SELECT usd FROM price_points WHERE currency = ? AND minute = ?").pluck()).get(r.currency, r.minute) as string | undefined) ?? null;
    const result = this.#upsert(TABLES.pricePoint, { currency: r.currency, minute: r.minute, usd: r.usd });
    if (result !== "unchanged" && this.#maintainStats) for (const c of this.#aggregates.repriced(r.currency, r.minute, before, r.usd)) this.#touched.add(c);
    return result;
  }

  upsertScore(r: ScoreRow): UpsertResult {
    if (r.name !== "") {
      const { chain, address } = refParts(refOf(r));
      this.#upsert(TABLES.collectionName, { chain, address, name: r.name });
    }
    return this.#upsert(TABLES.score, {
      collection_id: this.collectionOf(r),
      hype: r.hype,
      gains: r.gains,
      community: r.community,
      total: r.total,
    });
  }

  /**
   * Upserts one row of a table by its natural key: a kind declared with no
   * writes of its own beyond its columns (kind-writes.ts tableWrites).
   */
  upsertRow(spec: TableSpec, row: Columns): UpsertResult {
    return this.#upsert(spec, row);
  }

  /** Rows currently in `table`. */
  rowCount(table: string): number {
    return (this.#db.prepare(`SELECT count(*) FROM ${table}`).pluck().get() as number) ?? 0;
  }

  /**
   * Drops the secondary indexes of `kind`'s table (keeping the natural key,
   * which upserts need) and returns a function that rebuilds them. Building an
   * index once, sorted, is far cheaper than updating it row by row during a
   * large import. Both happen inside the caller's transaction, so readers see
   * the old indexes until it commits, and a killed import loses nothing.
   */
  deferIndexes(table: string): () => void {
    const indexes = this.#db
      .prepare(
        `SELECT name, sql FROM sqlite_master
         WHERE type = 'index' AND tbl_name = ? AND sql IS NOT NULL AND name != ?`,
      )
      .all(table, `${table}_natural_key`) as { name: string; sql: string }[];
    for (const { name } of indexes) this.#db.exec(`DROP INDEX ${name}`);
    const restoreTriggers = deferMarketTriggers(this.#db, table);
    if (restoreTriggers !== undefined) this.#marketDeferred = true;
    if (table === "sales") this.#indexesDeferred = true;
    this.#dropUpserters(table);
    return () => {
      for (const { sql } of indexes) this.#db.exec(sql);
      if (table === "sales") this.#indexesDeferred = false;
      // The collections written so far (not yet stamped: beforeCommit comes after).
      restoreTriggers?.(this.#touched.ids);
      this.#marketDeferred = false;
      this.#dropUpserters(table);
    };
  }

  /**
   * Inserts a new row, or updates the row with the same natural key when any
   * value differs; reports which happened so imports can count them.
   */
  #upsert(spec: TableSpec, row: Columns, beforeUpdate?: () => void, keepExisting = false): UpsertResult {
    const u = this.#upserter(spec);
    // Positional binding (faster than by name on hot imports): the insert
    // takes key then value columns; the update values, key, values again.
    // A feed's tables take the row's position last (insert) or first (update).
    const { key, values, feed, insertAlso } = u.spec;
    const params: unknown[] = new Array(key.length + values.length);
    for (let i = 0; i < key.length; i++) params[i] = row[key[i]!];
    for (let i = 0; i < values.length; i++) params[key.length + i] = row[values[i]!];
    const seq = feed === true ? this.#nextFeedSeq() : undefined;
    const also = insertAlso?.map(([, from]) => row[from]) ?? [];
    const inserted = seq === undefined ? u.insert.run(params, also) : u.insert.run(params, also, seq);
    if (inserted.changes > 0) {
      this.#insertedId = Number(inserted.lastInsertRowid);
      this.#touchedBy(spec, row, "inserted");
      return "inserted";
    }
    if (keepExisting) return "unchanged";
    beforeUpdate?.();
    const vals = params.slice(key.length);
    const compared = vals.slice(0, u.compared);
    const changed = seq === undefined ? u.update.run(vals, params.slice(0, key.length), compared) : u.update.run(seq, vals, params.slice(0, key.length), compared);
    if (changed.changes === 0) return "unchanged";
    this.#touchedBy(spec, row, "updated");
    return "updated";
  }

  /** Which collections a changed row changes the answers of. */
  #touchedBy(spec: TableSpec, row: Columns, result: "inserted" | "updated"): void {
    if (typeof row.collection_id === "number") this.#touched.add(row.collection_id);
    else if (spec.table === TABLES.collection.table) this.#touched.add(this.collectionId(collectionRef(row.chain as string, row.address as string)));
    // A user's new profile shows in every collection's influencers and tweets
    // that name them; a new user is named only by rows of this write.
    else if ((spec === TABLES.socialUser && result === "updated") || spec.touchesAll === true) this.#touched.all = true;
  }

  /** Forgets a table's statements (its indexes were dropped or rebuilt). */
  #dropUpserters(table: string): void {
    for (const [id, u] of this.#upserters) if (u.spec.table === table) this.#upserters.delete(id);
  }

  #upserter(spec: TableSpec): Upserter {
    // By table and columns: a table may be written by more than one spec (collections, collectionName).
    const id = upserterId(spec);
    let u = this.#upserters.get(id);
    if (!u) {
      const all = [...spec.key, ...spec.values, ...(spec.insertAlso ?? []).map(([c]) => c), ...(spec.feed === true ? ["feed_seq"] : [])];
      const marks = (n: number) => Array(n).fill("?").join(", ");
      // A row's ready answers (wire-rows.ts) are made from its other columns:
      // comparing them too would only cost (~700 bytes a sale), never decide.
      const compared = comparedColumns(spec.values);
      if (spec.values.slice(0, compared.length).some((c, i) => c !== compared[i])) throw new Error(`${spec.table}: the columns it does not compare must come last`);
      u = {
        spec,
        compared: compared.length,
        insert: this.#db.prepare(`INSERT OR IGNORE INTO ${spec.table} (${all.join(", ")}) VALUES (${marks(all.length)})`),
        update: this.#db.prepare(
          `UPDATE ${spec.table} SET ${spec.feed === true ? "feed_seq = ?, " : ""}${spec.values.map((c) => `${c} = ?`).join(", ")}
           WHERE ${spec.key.map((c) => `${c} = ?`).join(" AND ")}
             AND (${compared.join(", ")}) IS NOT (${marks(compared.length)})`,
        ),
      };
      this.#upserters.set(id, u);
    }
    return u;
  }
}
