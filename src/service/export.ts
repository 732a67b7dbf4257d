import type { DescMessage, Message } from "@bufbuild/protobuf";
import { AppraisalSchema, AssetRaritySchema, ListingSchema, OfferSchema, SaleSchema, TransferSchema } from "../../gen/marketdata/v1/resources_pb.js";
import { DEFAULT_CHAIN, refParts } from "../domain/chains.js";
import { EXPORT_KINDS, type ExportKind, isExportKind } from "../domain/export-kinds.js";
import { feedOf } from "../domain/kinds/index.js";
import type { CollectionSummaryRow, KeyValue, TokenRow } from "../domain/rows.js";
import { toAppraisal, toRarity } from "../domain/wire/messages.js";
import { compileJsonWriter } from "../domain/wire/json-writer.js";
import type { FeedKind } from "../store/ports/feed.js";
import { TOKEN_KEYS } from "../store/ports/market.js";
import { APPRAISAL_KEY, RARITY_KEY, type ReadRepositories } from "../store/ports/reads.js";
import type { KeySpec, Page } from "../store/ports/paging.js";
import { knownCollection } from "./collections.js";
import { decodePageToken, encodePageToken, queryDigest } from "./page-token.js";
import { collection, invalid, limit as limitParam } from "./params.js";

// A collection's records as the import's NDJSON lines (docs/export.md):
// what `marketdata import KIND` reads, so one instance can seed another.
// An export is read in chunks of at most `limit` records, each starting at a
// position the previous chunk answered: the feeds' kinds (sales, listings,
// offers, transfers) in feed position order, so a row written or changed
// after its chunk was read comes again in a later chunk; the others in their
// list's key order. A chunk is read whole before it is answered, so its
// next position can be said first (a header) and a chunk cut short is asked
// again from the same position: importing a record twice is harmless (a
// later record of the same natural key replaces it).

/** Records read from the store at a time; an export is metered in these (one read request each: docs/export.md). */
export const EXPORT_PAGE = 1000;
/** Records of one chunk: read whole before it is answered, so this bounds a chunk's memory. */
export const EXPORT_LIMIT = { fallback: 10_000, max: 10_000 };

export interface ExportRequest {
  kind: ExportKind;
  contractAddress: string;
  chain: string;
  /** "" for the first chunk, else the position a chunk answered. */
  position: string;
  /** Records at most (0: the default). */
  limit: number;
}

export interface ExportChunk {
  /** Import lines (NDJSON without the newlines). */
  lines: string[];
  /** Where the next chunk starts: pass it as `position`. */
  position: string;
  /** Whether the export reached the collection's last record (a later chunk from `position` may still find records written since). */
  done: boolean;
}

/** A page of import lines: where a read after it starts (`after` again when none was read), and whether more follow. */
interface SourcePage {
  lines: string[];
  last: KeyValue[] | null;
  more: boolean;
}

/** One kind's reads: a page of import lines after a key, and its key's spec. */
interface Source {
  spec: KeySpec;
  page(collectionId: number, after: KeyValue[] | null, limit: number, now: number, ref: string): Promise<SourcePage>;
}

const FEED_KEY: KeySpec = ["int"];

/** A feed kind's rows above a position: the rows a reorganisation took back are passed over (the copy never had them). */
function feedSource(store: ReadRepositories, kind: FeedKind, schema: DescMessage): Source {
  const write = compileJsonWriter(schema);
  const { toMessage } = feedOf(kind);
  return {
    spec: FEED_KEY,
    async page(collectionId, after, limit, now) {
      const entries = await store.feed.merged(kind, [collectionId], after === null ? 0 : (after[0] as number), limit);
      const lines: string[] = [];
      for (const e of entries) if (e.removed === undefined) lines.push(write(toMessage(e.row, now)));
      const last = entries[entries.length - 1];
      // The last position read, even at the end: a later chunk from it finds only what was written since.
      return { lines, last: last === undefined ? after : [last.seq], more: entries.length === limit };
    },
  };
}

/** A list's pages, each row as a record. */
function pageSource<R>(spec: KeySpec, read: (collectionId: number, after: KeyValue[] | null, limit: number) => Page<R> | Promise<Page<R>>, line: (row: R) => string | undefined): Source {
  return {
    spec,
    async page(collectionId, after, limit) {
      const page = await read(collectionId, after, limit);
      const lines: string[] = [];
      for (const r of page.rows) {
        const l = line(r);
        if (l !== undefined) lines.push(l);
      }
      // At the end the position stays at this page's start: a later chunk reads its rows again (and any after them).
      return { lines, last: page.nextKey ?? after, more: page.nextKey !== null };
    },
  };
}

/** A token's record: its attributes, its metadata (OpenSea's names) and its owner as it is now. */
function tokenLine(r: TokenRow): string {
  return JSON.stringify({
    contractAddress: r.contractAddress,
    assetId: r.assetId,
    currentOwner: r.owner,
    attributes: r.attributes.map((a) => ({ trait_type: a.traitType, value: a.value, ...(a.displayType === "" ? {} : { display_type: a.displayType }) })),
    name: r.name,
    description: r.description,
    image: r.image,
    animation_url: r.animationUrl,
    external_url: r.externalUrl,
  });
}

/** A row as its message's /v1 JSON (the answer the list gives of it). */
function writerOf<R>(schema: DescMessage, to: (r: R) => Message): (r: R) => string {
  const write = compileJsonWriter(schema);
  return (r) => write(to(r));
}

/** The collection's summary row (its record's fields, its spam mark): one page of the collections list, found by its address. */
async function summaryOf(store: ReadRepositories, collectionId: number, ref: string): Promise<CollectionSummaryRow | undefined> {
  const { chain, address } = refParts(ref);
  const { page } = await store.collectionList.collectionsPage({ chain, query: address, sort: "volumeAll", includeSpam: true, includeWash: true }, { after: null, limit: 2 });
  return page.rows.find((r) => r.collectionId === collectionId);
}

/** The collection's one record of a kind, read from its summary. */
function summarySource(store: ReadRepositories, line: (r: CollectionSummaryRow) => string | undefined): Source {
  return {
    spec: ["int"],
    async page(collectionId, after, _limit, _now, ref) {
      // Its position says whether it was sent: a later chunk sends it again only as a new export would.
      if (after !== null) return { lines: [], last: after, more: false };
      const row = await summaryOf(store, collectionId, ref);
      const l = row === undefined ? undefined : line(row);
      return { lines: l === undefined ? [] : [l], last: [1], more: false };
    },
  };
}

function sources(store: ReadRepositories): Record<ExportKind, Source> {
  const tokens = (collectionId: number, after: KeyValue[] | null, limit: number) => store.tokens.tokensPage({ collectionId, sort: "id" }, { after, limit });
  return {
    collections: summarySource(store, (r) =>
      JSON.stringify({ contractAddress: r.contractAddress, name: r.name, description: r.description, image: r.image, externalUrl: r.externalUrl, twitter: r.twitter, discord: r.discord,
        tokenStandard: r.tokenStandard }),
    ),
    spam: summarySource(store, (r) => (r.isSpam ? JSON.stringify({ contractAddress: r.contractAddress, isSpam: true, reason: r.spamReason }) : undefined)),
    tokens: pageSource(TOKEN_KEYS.id, tokens, tokenLine),
    // Flags are read with the tokens (a token answers its flag): a flag of a token without a record is not carried.
    flags: pageSource(TOKEN_KEYS.id, tokens, (r) =>
      r.isFlagged ? JSON.stringify({ contractAddress: r.contractAddress, assetId: r.assetId, isFlagged: true, reason: r.flagReason }) : undefined,
    ),
    sales: feedSource(store, "sales", SaleSchema),
    transfers: feedSource(store, "transfers", TransferSchema),
    listings: feedSource(store, "listings", ListingSchema),
    offers: feedSource(store, "offers", OfferSchema),
    appraisals: pageSource(APPRAISAL_KEY, (id, after, limit) => store.assetMetrics.appraisalsPage(id, { after, limit }), writerOf(AppraisalSchema, toAppraisal)),
    rarity: pageSource(RARITY_KEY, (id, after, limit) => store.assetMetrics.rarityPage(id, { after, limit }), writerOf(AssetRaritySchema, toRarity)),
  };
}

/** Reads exports from one store (the server's, or a command's). */
export class Exporter {
  readonly #store: ReadRepositories;
  readonly #sources: Record<ExportKind, Source>;
  readonly #now: () => number;

  constructor(store: ReadRepositories, now: () => number = () => Math.floor(Date.now() / 1000)) {
    this.#store = store;
    this.#sources = sources(store);
    this.#now = now;
  }

  /**
   * The chunk of `req`: its records read EXPORT_PAGE at a time, `onPage`
   * called before each read after the first (the server meters them there,
   * and may hold the read back).
   */
  async chunk(req: ExportRequest, onPage?: () => Promise<void>): Promise<ExportChunk> {
    if (!isExportKind(req.kind)) throw invalid(`kind must be one of ${EXPORT_KINDS.join(", ")}, got ${JSON.stringify(String(req.kind).slice(0, 40))}`);
    const { ref } = collection(req);
    const limit = limitParam(req.limit === 0 ? undefined : req.limit, "limit", EXPORT_LIMIT);
    const source = this.#sources[req.kind];
    const digest = queryDigest(["export", req.kind, ref]);
    let after = decodePageToken("position", req.position, digest, source.spec);
    const collectionId = await knownCollection(this.#store.collections, ref);
    const chain = req.chain === "" || req.chain === DEFAULT_CHAIN ? undefined : req.chain;
    const now = this.#now();
    const lines: string[] = [];
    // Pages are counted, not records: a page of rows a kind leaves out (flags of unflagged tokens) still ends.
    let left = limit;
    let done = false;
    for (let first = true; left > 0; first = false) {
      if (!first) await onPage?.();
      const size = Math.min(EXPORT_PAGE, left);
      const page = await source.page(collectionId, after, size, now, ref);
      for (const l of page.lines) lines.push(chain === undefined ? l : `{"chain":${JSON.stringify(chain)},${l.slice(1)}`);
      left -= size;
      after = page.last;
      if (!page.more) {
        done = true;
        break;
      }
    }
    return { lines, position: encodePageToken(digest, after), done };
  }
}
