import type { TransferRow } from "../rows.js";
import { toTransfer } from "../wire/messages.js";
import { declareKind, notAhead } from "./declaration.js";
import * as f from "./fields.js";

/** A record's fields and their checks. */
const shape = f.collectionRecord({
  hash: f.txHash,
  logIndex: f.count,
  from: f.address,
  to: f.address,
  contractAddress: f.address,
  assetId: f.uint256,
  amount: f.quantity,
  timestamp: f.epochSeconds,
  block: f.count,
  blockHash: f.blockHash,
  removed: f.bool,
  finality: f.answeredFinality,
}, { amount: "1", blockHash: "", removed: false, finality: undefined });

/** A transfer: units of one token (one, for an ERC-721 token) moved by one log of a transaction (a sale's or not). */
export const transfers = declareKind({
  name: "transfers",
  shape,
  rules: (r, problems, ctx) => notAhead("timestamp", r.timestamp, ctx, problems),
  naturalKey: ["hash", "logIndex", "contractAddress", "assetId"],
  moves: ["owners", "fillable-listings"],
  feed: { event: "transfer", slot: 3, time: (r: TransferRow) => r.timestamp, toMessage: (r: TransferRow) => toTransfer(r) },
});
