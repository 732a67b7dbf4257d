import { create } from "@bufbuild/protobuf";
import { WebhookEventSchema } from "../../../gen/marketdata/v1/webhook_service_pb.js";
import { compileJsonWriter } from "../../domain/wire/json-writer.js";
import type { FeedEntry, FeedKind } from "../../store/ports/feed.js";
import { FEED_KINDS, feedOf } from "../../domain/kinds/index.js";
import { eventId, REMOVED_EVENT, removalOf } from "../feed-events.js";

// A delivery's body (WebhookPayload in webhook_service.proto): a batch of
// events in position order, each in the /v1 JSON dialect the lists answer
// with, so a receiver parses a webhook's sale as it parses /v1/asset/sales'.

/** The payload's type: the one kind of message webhooks send. */
export const PAYLOAD_TYPE = "marketdata.events";

/** The event type of each feed kind (its declaration's). */
export const EVENT_TYPE = Object.fromEntries(FEED_KINDS.map((k) => [k, feedOf(k).event])) as Readonly<Record<FeedKind, string>>;

const writeEvent = compileJsonWriter(WebhookEventSchema);

/**
 * One event of a feed entry as its JSON text. `now`: epoch seconds (an
 * offer's status depends on it); `chain`: its collection's.
 */
export function eventJson(epoch: string, kind: FeedKind, entry: FeedEntry<unknown>, now: number, chain: string): string {
  const feed = feedOf(kind);
  // The event's message fills the WebhookEvent field named as its type; a record taken back fills `removed`.
  const type = entry.removed === undefined ? feed.event : REMOVED_EVENT;
  return writeEvent(create(WebhookEventSchema, {
    id: eventId(epoch, entry.seq),
    type,
    position: BigInt(entry.seq),
    timestamp: BigInt(feed.time(entry.row)),
    [type]: entry.removed === undefined ? feed.toMessage(entry.row, now) : removalOf(kind, entry, epoch, now),
    chain,
  }));
}

/** The body of a batch: its events' JSON texts spliced into the payload (the same bytes on every retry). */
export function batchBody(webhookId: string, events: readonly string[], madeAt: Date): string {
  return `{"type":${JSON.stringify(PAYLOAD_TYPE)},"timestamp":${JSON.stringify(madeAt.toISOString())},"data":{"webhookId":${JSON.stringify(webhookId)},"events":[${events.join(",")}]}}`;
}

/** A batch's webhook-id: the same on each of its retries; a replay's batches are new messages (their events keep their ids). */
export function messageId(webhookId: string, generation: number, first: number, last: number): string {
  return `msg_${webhookId.replace(/^wh_/, "")}_${generation}_${first}_${last}`;
}
