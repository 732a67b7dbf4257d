import { create } from "@bufbuild/protobuf";
import type { ServiceImpl } from "@connectrpc/connect";
import {
  type CollectionService,
  GetCollectionStatsResponseSchema,
  ListInfluencersResponseSchema,
  ListScoresResponseSchema,
  ListTweetsResponseSchema,
} from "../../gen/marketdata/v1/collection_service_pb.js";
import type { ReadStore } from "../store/read-store.js";
import { knownCollection } from "./collections.js";
import * as p from "./params.js";
import { CURRENCY, toInfluencer, toTweet } from "./records.js";

export function createCollectionService(store: ReadStore): ServiceImpl<typeof CollectionService> {
  return {
    getCollectionStats(req) {
      const address = p.contractAddress(req.contractAddress);
      const filter = { assetId: p.optionalAssetId(req.assetId), ...p.timeWindow(req.since, req.until) };
      const summary = store.salesSummary(knownCollection(store, address), filter);
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

    listInfluencers(req) {
      const address = p.contractAddress(req.contractAddress);
      const limit = p.limit(req.limit);
      const rows = store.topInfluencers(knownCollection(store, address), limit);
      return create(ListInfluencersResponseSchema, { success: 1, data: rows.map(toInfluencer) });
    },

    listTweets(req) {
      const address = p.contractAddress(req.contractAddress);
      const limit = p.limit(req.limit);
      const rows = store.topTweets(knownCollection(store, address), limit);
      return create(ListTweetsResponseSchema, { success: 1, data: rows.map(toTweet) });
    },

    listScores(req) {
      const addresses = p.contractAddresses(req.contractAddress);
      // Every address must be known; a known collection without scores is left out.
      const ids = addresses.map((a) => knownCollection(store, a));
      const data = ids.flatMap((id) => store.score(id) ?? []);
      return create(ListScoresResponseSchema, { successful: 1, data });
    },
  };
}
