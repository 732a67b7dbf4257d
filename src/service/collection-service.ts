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
import { createAnalyticsMethods } from "./analytics.js";
import { createCollectionListMethods } from "./collection-list.js";
import { createActivityMethods } from "./activity.js";
import type { FeedHub } from "./feed-hub.js";
import { knownCollection } from "./collections.js";
import * as p from "./params.js";
import { CURRENCY, toInfluencer, toTweet } from "../domain/wire/messages.js";
import { listAnswer, type LocalCall, wireForm } from "./local-call.js";

export function createCollectionService(store: ReadRepositories, feeds: FeedHub): ServiceImpl<typeof CollectionService> {
  return {
    ...createAnalyticsMethods(store),
    ...createActivityMethods(store, feeds),
    ...createCollectionListMethods(store),

    async getCollectionStats(req) {
      const { address, ref } = p.collection(req);
      // Wash trades left out unless asked for (docs/wash-trades.md).
      const filter = { assetId: p.optionalAssetId(req.assetId), ...p.timeWindow(req.since, req.until), includeWash: req.includeWash };
      const summary = await store.sales.salesSummary(await knownCollection(store.collections, ref), filter);
      return create(GetCollectionStatsResponseSchema, {
        successful: 1,
        data: {
          contractAddress: address,
          totalNumSales: BigInt(summary.totalNumSales),
          totalVolume: summary.totalVolume,
          currency: CURRENCY,
          groups: summary.groups.map((g) => ({
            marketplace: g.marketplace,
            totalNumSales: BigInt(g.totalNumSales),
            totalVolume: g.totalVolume,
            currency: CURRENCY,
          })),
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
