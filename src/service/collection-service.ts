import { collectionRef } from "../domain/chains.js";
import { create } from "@bufbuild/protobuf";
import type { HandlerContext, ServiceImpl } from "@connectrpc/connect";
import {
  type CollectionService,
  GetCollectionStatsResponseSchema,
  ListInfluencersResponseSchema,
  ListScoresResponseSchema,
  ListTweetsResponseSchema,
} from "../../gen/marketdata/v1/collection_service_pb.js";
import type { ReadRepositories } from "../store/ports/reads.js";
import type { SalesSummary } from "../domain/rows.js";
import { USD, USD_STATS_MAX_SALES } from "../domain/money.js";
import { createAnalyticsMethods } from "./analytics.js";
import { createCollectionListMethods } from "./collection-list.js";
import { createActivityMethods } from "./activity.js";
import type { FeedHub } from "./feed-hub.js";
import { knownCollection } from "./collections.js";
import * as p from "./params.js";
import { CURRENCY, toInfluencer, toTweet } from "../domain/wire/messages.js";
import { listAnswer, type LocalCall, wireForm } from "./local-call.js";

/** A summary in wei (SalesSummary) or in dollars (UsdSummary, which tells the sales without a point). */
type Summary = Omit<SalesSummary, "groups"> & { unpricedNumSales?: number; groups: (SalesSummary["groups"][number] & { unpricedNumSales?: number })[] };

export function createCollectionService(store: ReadRepositories, feeds: FeedHub): ServiceImpl<typeof CollectionService> {
  return {
    ...createAnalyticsMethods(store),
    ...createActivityMethods(store, feeds),
    ...createCollectionListMethods(store),

    async getCollectionStats(req) {
      const { address, ref } = p.collection(req);
      // Wash trades left out unless asked for (docs/wash-trades.md).
      const filter = { assetId: p.optionalAssetId(req.assetId), ...p.timeWindow(req.since, req.until), includeWash: req.includeWash };
      const unit = p.amountUnit(req.currency);
      const collection = await knownCollection(store.collections, ref);
      // In dollars (docs/money.md, "Stats in USD"): read from the sales, with the sales without a point told.
      const summary: Summary | undefined = unit === "usd"
        ? await store.sales.salesUsdSummary(collection, filter, USD_STATS_MAX_SALES)
        : await store.sales.salesSummary(collection, filter);
      if (summary === undefined) {
        throw p.invalid(`currency=usd sums at most ${USD_STATS_MAX_SALES} sales per call (docs/money.md, "Stats in USD"), and this window holds more: narrow it with since and until`);
      }
      const currency = unit === "usd" ? USD : CURRENCY;
      const unpriced = (t: { unpricedNumSales?: number | undefined }) => (t.unpricedNumSales === undefined ? {} : { unpricedNumSales: BigInt(t.unpricedNumSales) });
      return create(GetCollectionStatsResponseSchema, {
        successful: 1,
        data: {
          contractAddress: address,
          totalNumSales: BigInt(summary.totalNumSales),
          totalVolume: summary.totalVolume,
          currency,
          groups: summary.groups.map((g) => ({ marketplace: g.marketplace, totalNumSales: BigInt(g.totalNumSales), totalVolume: g.totalVolume, currency, ...unpriced(g) })),
          ...unpriced(summary),
        },
      });
    },

    async listInfluencers(req, call?: HandlerContext | LocalCall) {
      const { ref } = p.collection(req);
      const limit = p.limit(req.limit);
      const wire = wireForm(call);
      const rows = await store.social.topInfluencers(await knownCollection(store.collections, ref), limit, wire);
      return listAnswer(create(ListInfluencersResponseSchema, { success: 1 }), ListInfluencersResponseSchema.field.data, wire, rows, toInfluencer);
    },

    async listTweets(req, call?: HandlerContext | LocalCall) {
      const { ref } = p.collection(req);
      const limit = p.limit(req.limit);
      const wire = wireForm(call);
      const rows = await store.social.topTweets(await knownCollection(store.collections, ref), limit, wire);
      return listAnswer(create(ListTweetsResponseSchema, { success: 1 }), ListTweetsResponseSchema.field.data, wire, rows, toTweet);
    },

    async listScores(req) {
      const chain = p.chain(req.chain);
      const addresses = p.contractAddresses(req.contractAddress);
      // Every address must be known on the chain; a known collection without scores is left out.
      const ids = await Promise.all(addresses.map((a) => knownCollection(store.collections, collectionRef(chain, a))));
      const scores = await Promise.all(ids.map((id) => store.collections.score(id)));
      const data = scores.flatMap((s) => s ?? []);
      return create(ListScoresResponseSchema, { successful: 1, data });
    },
  };
}
