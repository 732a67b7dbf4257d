import { create } from "@bufbuild/protobuf";
import { type Removal, RemovalSchema } from "../../gen/marketdata/v1/resources_pb.js";
import { feedOf } from "../domain/kinds/index.js";
import type { FeedEntry, FeedKind } from "../store/ports/feed.js";

// What the live feeds' events are called and how a removal is told, the
// same on a stream (watch.ts, activity.ts) and a webhook (webhooks/payload.ts).

/** The event type of a record a reorganisation took back (docs/chains.md, "Removals in the feeds"). */
export const REMOVED_EVENT = "removed";

/** An event's id: stable across retries, replays and streams of the same store (its feed epoch). */
export function eventId(epoch: string, position: number): string {
  return `evt_${epoch}_${position}`;
}

/** The Removal message of a feed entry that took a record back (entry.removed set): the record, and the event that had sent it. */
export function removalOf(kind: FeedKind, entry: FeedEntry<unknown>, epoch: string, now: number): Removal {
  const feed = feedOf(kind);
  const original = entry.removed?.originalSeq ?? 0;
  return create(RemovalSchema, {
    type: feed.event,
    originalId: eventId(epoch, original),
    originalPosition: BigInt(original),
    [feed.event]: feed.toMessage(entry.row, now),
  });
}
