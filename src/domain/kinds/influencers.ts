import type { InfluencerRecord } from "../../../gen/marketdata/v1/ingest_service_pb.js";
import { declareKind } from "./declaration.js";
import * as f from "./fields.js";
import { socialUser, userOf } from "./parts.js";

/** A record's fields and their checks. */
const shape = f.collectionRecord({ contractAddress: f.address, user: f.nested(socialUser), score: f.finite });

/** An account's influence score in a collection's community. */
export const influencers = declareKind({
  name: "influencers",
  shape,
  fromMessage: (r: InfluencerRecord) => ({ contractAddress: r.contractAddress, user: userOf(r.user), score: r.score }),
  naturalKey: ["contractAddress", "user.id"],
  moves: ["social-users"],
});
