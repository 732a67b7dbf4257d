import { create } from "@bufbuild/protobuf";
import type { ServiceImpl } from "@connectrpc/connect";
import {
  type AssetService,
  ListAppraisalsResponseSchema,
  ListListingsResponseSchema,
  ListRarityResponseSchema,
  ListSalesResponseSchema,
} from "../../gen/marketdata/v1/asset_service_pb.js";
import { ListingStatus } from "../../gen/marketdata/v1/resources_pb.js";
import {
  APPRAISAL_KEY,
  type KeySpec,
  LISTING_KEY,
  type ListingStatusName,
  type Page,
  type PageRequest,
  RARITY_KEY,
  type ReadStore,
  SALE_KEY,
} from "../store/read-store.js";
import { knownCollection } from "./collections.js";
import { decodePageToken, encodePageToken, queryDigest } from "./page-token.js";
import * as p from "./params.js";
import { toAppraisal, toListing, toRarity, toSale } from "./records.js";

export function createAssetService(store: ReadStore): ServiceImpl<typeof AssetService> {
  /**
   * Appraisals and rarity share their parameters: either up to 20 asset ids
   * (limit and cursor then ignored entirely) or a keyset page.
   */
  /** A keyset page of `list`, its token bound to the collection and filters. */
  function keysetPage<F, Row>(
    list: string,
    req: { limit?: number | undefined; cursor: string },
    address: string,
    filter: F,
    keySpec: KeySpec,
    read: (collection: number, filter: F, page: PageRequest) => Page<Row>,
  ): { rows: Row[]; token: string } {
    const limit = p.limit(req.limit);
    const collection = knownCollection(store, address);
    const digest = queryDigest([list, address, filter]);
    const after = decodePageToken("cursor", req.cursor, digest, keySpec);
    const page = read(collection, filter, { limit, after });
    return { rows: page.rows, token: encodePageToken(digest, page.nextKey) };
  }

  /**
   * Appraisals and rarity share their parameters: either up to 20 asset ids
   * (limit and cursor then ignored entirely) or a keyset page.
   */
  function assetPage<Row>(
    req: { contractAddress: string; assetId: string[]; limit?: number | undefined; cursor: string },
    list: string,
    keySpec: KeySpec,
    read: { byAsset(collection: number, ids: string[]): Row[]; page(collection: number, page: PageRequest): Page<Row> },
  ): { rows: Row[]; nextPage: string } {
    const address = p.contractAddress(req.contractAddress);
    if (req.assetId.length > 0) {
      return { rows: read.byAsset(knownCollection(store, address), p.assetIds(req.assetId)), nextPage: "" };
    }
    const { rows, token } = keysetPage(list, req, address, {}, keySpec, (c, _f, page) => read.page(c, page));
    return { rows, nextPage: token };
  }

  return {
    listAppraisals(req) {
      const { rows, nextPage } = assetPage(req, "appraisals", APPRAISAL_KEY, {
        byAsset: (c, ids) => store.appraisalsByAsset(c, ids),
        page: (c, page) => store.appraisalsPage(c, page),
      });
      return create(ListAppraisalsResponseSchema, { successful: 1, nextPage, data: rows.map(toAppraisal) });
    },

    listRarity(req) {
      const { rows, nextPage } = assetPage(req, "rarity", RARITY_KEY, {
        byAsset: (c, ids) => store.rarityByAsset(c, ids),
        page: (c, page) => store.rarityPage(c, page),
      });
      return create(ListRarityResponseSchema, { successful: 1, nextPage, data: rows.map(toRarity) });
    },

    listSales(req) {
      const address = p.contractAddress(req.contractAddress);
      const filter = {
        assetId: p.optionalAssetId(req.assetId),
        marketplace: p.marketplace(req.marketplace),
        ...p.timeWindow(req.since, req.until),
      };
      const { rows, token } = keysetPage("sales", req, address, filter, SALE_KEY, (c, f, page) => store.salesPage(c, f, page));
      return create(ListSalesResponseSchema, { success: 1, cursor: token, data: rows.map(toSale) });
    },

    listListings(req) {
      const address = p.contractAddress(req.contractAddress);
      const filter = {
        assetId: p.optionalAssetId(req.assetId),
        marketplace: p.marketplace(req.marketplace),
        status: listingStatus(req.status),
      };
      const { rows, token } = keysetPage("listings", req, address, filter, LISTING_KEY, (c, f, page) =>
        store.listingsPage(c, f, page),
      );
      return create(ListListingsResponseSchema, { success: 1, cursor: token, data: rows.map(toListing) });
    },
  };
}

const STATUS_NAMES: Partial<Record<ListingStatus, ListingStatusName>> = {
  [ListingStatus.CREATED]: "CREATED",
  [ListingStatus.FULFILLED]: "FULFILLED",
  [ListingStatus.CANCELLED]: "CANCELLED",
  [ListingStatus.EXPIRED]: "EXPIRED",
};

function listingStatus(status: ListingStatus): ListingStatusName | undefined {
  if (status === ListingStatus.UNSPECIFIED) return undefined;
  const name = STATUS_NAMES[status];
  if (name === undefined) {
    throw p.invalid(`status must be one of ${Object.values(STATUS_NAMES).join(", ")}, got ${status}`);
  }
  return name;
}

