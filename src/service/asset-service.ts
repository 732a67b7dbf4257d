import { DEFAULT_CHAIN } from "../domain/chains.js";
import { create } from "@bufbuild/protobuf";
import type { HandlerContext, ServiceImpl } from "@connectrpc/connect";
import {
  type AssetService,
  ListAppraisalsResponseSchema,
  ListListingsResponseSchema,
  ListRarityResponseSchema,
  ListOffersResponseSchema,
  ListSalesResponseSchema,
  ListTokenOwnersResponseSchema,
  ListTokensResponseSchema,
} from "../../gen/marketdata/v1/asset_service_pb.js";
import { OFFER_KEY, TOKEN_KEYS, TOKEN_OWNER_KEY, TOKEN_SORTS, type TokensFilter } from "../store/ports/market.js";
import type { KeySpec, MaybePromise, Page, PageRequest } from "../store/ports/paging.js";
import { APPRAISAL_KEY, LISTING_KEY, RARITY_KEY, type ReadRepositories, SALE_KEY } from "../store/ports/reads.js";
import { knownCollection } from "./collections.js";
import type { FeedHub } from "./feed-hub.js";
import { createWatchMethods } from "./watch.js";
import { listAnswer, type LocalCall, wireForm } from "./local-call.js";
import type { Fragment } from "../domain/wire/fragments.js";
import type { ListingRow, OfferRow, SaleRow } from "../domain/rows.js";
import { decodePageToken, encodePageToken, queryDigest } from "./page-token.js";
import { marketplaceCheck } from "./marketplaces.js";
import * as p from "./params.js";
import { nowSeconds } from "../domain/formats.js";
import { toAppraisal, toListing, toOffer, toRarity, toSale, toToken } from "../domain/wire/messages.js";
import { finalPage } from "./finality.js";
import { orderInUsd, pricedAs, saleInUsd } from "../domain/money.js";

export function createAssetService(store: ReadRepositories, hub: FeedHub, checkMarketplace = marketplaceCheck(store.collections)): ServiceImpl<typeof AssetService> {
  /** A keyset page of `list`, its token bound to the collection and filters. */
  async function keysetPage<F, Row>(
    list: string,
    req: { limit?: number | undefined; cursor: string },
    ref: string,
    filter: F,
    keySpec: KeySpec,
    read: (collection: number, filter: F, page: PageRequest) => MaybePromise<Page<Row>>,
  ): Promise<{ rows: Row[]; token: string }> {
    const limit = p.limit(req.limit);
    const collection = await knownCollection(store.collections, ref);
    const digest = queryDigest([list, ref, filter]);
    const after = decodePageToken("cursor", req.cursor, digest, keySpec);
    const page = await read(collection, filter, { limit, after });
    return { rows: page.rows, token: encodePageToken(digest, page.nextKey) };
  }

  /**
   * Appraisals and rarity share their parameters: either up to 20 asset ids
   * (limit and cursor then ignored entirely) or a keyset page.
   */
  async function assetPage<Row>(
    req: { contractAddress: string; chain: string; assetId: string[]; limit?: number | undefined; cursor: string },
    list: string,
    keySpec: KeySpec,
    read: {
      byAsset(collection: number, ids: string[]): MaybePromise<Row[]>;
      page(collection: number, page: PageRequest): MaybePromise<Page<Row>>;
    },
  ): Promise<{ rows: Row[]; nextPage: string }> {
    const { ref } = p.collection(req);
    if (req.assetId.length > 0) {
      const ids = p.assetIds(req.assetId);
      return { rows: await read.byAsset(await knownCollection(store.collections, ref), ids), nextPage: "" };
    }
    const { rows, token } = await keysetPage(list, req, ref, {}, keySpec, (c, _f, page) => read.page(c, page));
    return { rows, nextPage: token };
  }

  /** Orders with their prices in US dollars at the points in force at `now` (docs/money.md, "Amounts in USD"): one seek per token the page names. */
  async function ordersInUsd<T extends ListingRow | OfferRow>(rows: readonly T[], now: number): Promise<T[]> {
    const symbols = [...new Set(rows.map((r) => pricedAs(r.currency)))];
    const points = symbols.length === 0 ? new Map<string, string | null>() : await store.prices.pointsInForce(symbols, now);
    return rows.map((r) => orderInUsd(r, points));
  }

  return {
    ...createWatchMethods(store, hub),

    async listAppraisals(req) {
      const { rows, nextPage } = await assetPage(req, "appraisals", APPRAISAL_KEY, {
        byAsset: (c, ids) => store.assetMetrics.appraisalsByAsset(c, ids),
        page: (c, page) => store.assetMetrics.appraisalsPage(c, page),
      });
      return create(ListAppraisalsResponseSchema, { successful: 1, nextPage, data: rows.map(toAppraisal) });
    },

    async listRarity(req) {
      const { rows, nextPage } = await assetPage(req, "rarity", RARITY_KEY, {
        byAsset: (c, ids) => store.assetMetrics.rarityByAsset(c, ids),
        page: (c, page) => store.assetMetrics.rarityPage(c, page),
      });
      return create(ListRarityResponseSchema, { successful: 1, nextPage, data: rows.map(toRarity) });
    },

    async listTokens(req) {
      const owner = p.optionalOwner(req.owner);
      const chain = p.chain(req.chain);
      const ref = req.contractAddress === "" && owner !== undefined ? undefined : p.collection(req).ref;
      const sort = p.choice(req.sort, TOKEN_SORTS, "sort");
      const filter: TokensFilter = { assetId: p.optionalAssetId(req.assetId), owner, trait: p.optionalTrait(req.trait), sort };
      if (ref === undefined && sort !== "id") throw p.invalid(`sort=${sort} needs contractAddress (a wallet's tokens in every collection are by collection, then asset id)`);
      if (ref === undefined && (filter.trait !== undefined || filter.assetId !== undefined)) {
        throw p.invalid(`${filter.trait !== undefined ? "trait" : "assetId"} needs contractAddress`);
      }
      const limit = p.limit(req.limit);
      // A wallet's tokens in every collection are those on the request's chain.
      if (ref !== undefined) filter.collectionId = await knownCollection(store.collections, ref);
      else filter.chain = chain;
      // The default chain's wallet pages keep the tokens they had before chains (its name is not in them).
      const digest = queryDigest(["tokens", ref ?? (chain === DEFAULT_CHAIN ? "" : chain), { ...filter, collectionId: undefined, chain: undefined }]);
      const after = decodePageToken("cursor", req.cursor, digest, TOKEN_KEYS[sort]);
      const page = await store.tokens.tokensPage(filter, { limit, after });
      return create(ListTokensResponseSchema, {
        successful: 1,
        nextPage: encodePageToken(digest, page.nextKey),
        data: page.rows.map(toToken),
      });
    },

    async listTokenOwners(req) {
      const { ref } = p.collection(req);
      const filter = { assetId: p.assetId(req.assetId) };
      const { rows, token } = await keysetPage("owners", req, ref, filter, TOKEN_OWNER_KEY, (c, f, page) => store.tokens.ownersPage(c, f.assetId, page));
      return create(ListTokenOwnersResponseSchema, {
        successful: 1,
        nextPage: token,
        data: rows.map((r) => ({ address: r.address, balance: String(r.balance) })),
      });
    },

    async listOffers(req) {
      const { ref } = p.collection(req);
      const filter = { assetId: p.optionalAssetId(req.assetId), status: p.listingStatus(req.status) };
      const usd = p.amountUnit(req.currency) === "usd";
      const now = nowSeconds();
      const { rows, token } = await keysetPage("offers", req, ref, filter, OFFER_KEY, (c, f, page) => store.offers.offersPage(c, f, page, now));
      const answered = usd ? await ordersInUsd(rows, now) : rows;
      return create(ListOffersResponseSchema, { success: 1, cursor: token, data: answered.map((r) => toOffer(r, now)) });
    },

    async listSales(req, call?: HandlerContext | LocalCall) {
      const { ref } = p.collection(req);
      // One asset id, or several comma-separated (as appraisals and rarity take them); one keeps its page tokens' form.
      const ids = req.assetId === "" ? [] : p.assetIds(req.assetId.split(","));
      const final = p.finalOnly(req.finality);
      const filter = {
        ...(ids.length > 1 ? { assetIds: ids } : { assetId: ids[0] }),
        marketplace: p.marketplace(req.marketplace),
        ...p.timeWindow(req.since, req.until),
        // In the cursor's digest; the finalized block is looked up per page (finality.ts).
        ...(final ? { final } : {}),
      };
      const usd = p.amountUnit(req.currency) === "usd";
      await checkMarketplace(filter.marketplace);
      // In dollars, the rows are converted: their kept answers (in the token's unit) are not used.
      const wire = usd ? undefined : wireForm(call);
      const { rows, token } = await keysetPage<typeof filter, SaleRow | Fragment>("sales", req, ref, filter, SALE_KEY, (c, f, page) =>
        final
          ? finalPage(store, p.chain(req.chain), { rows: [], nextKey: null }, (maxBlock) => store.sales.salesPage(c, { ...f, maxBlock }, page, wire))
          : store.sales.salesPage(c, f, page, wire));
      const answered = usd ? (rows as SaleRow[]).map(saleInUsd) : rows;
      return listAnswer(create(ListSalesResponseSchema, { success: 1, cursor: token }), ListSalesResponseSchema.field.data, wire, answered, toSale);
    },

    async listListings(req, call?: HandlerContext | LocalCall) {
      const { ref } = p.collection(req);
      const filter = {
        assetId: p.optionalAssetId(req.assetId),
        marketplace: p.marketplace(req.marketplace),
        status: p.listingStatus(req.status),
      };
      const usd = p.amountUnit(req.currency) === "usd";
      await checkMarketplace(filter.marketplace);
      const wire = usd ? undefined : wireForm(call);
      const { rows, token } = await keysetPage<typeof filter, ListingRow | Fragment>("listings", req, ref, filter, LISTING_KEY, (c, f, page) =>
        store.listings.listingsPage(c, f, page, wire),
      );
      const answered = usd ? await ordersInUsd(rows as ListingRow[], nowSeconds()) : rows;
      return listAnswer(create(ListListingsResponseSchema, { success: 1, cursor: token }), ListListingsResponseSchema.field.data, wire, answered, toListing);
    },
  };
}
