import { AssetService } from "../../gen/marketdata/v1/asset_service_pb.js";
import { CollectionService } from "../../gen/marketdata/v1/collection_service_pb.js";
import { IngestService } from "../../gen/marketdata/v1/ingest_service_pb.js";
import { WebhookService } from "../../gen/marketdata/v1/webhook_service_pb.js";

/** Every RPC of the contract by name, from its descriptors: a client test that lists what it called is held to all of them. */
export const EVERY_RPC: readonly string[] = [AssetService, CollectionService, IngestService, WebhookService].flatMap((s) => s.methods.map((m) => m.name)).sort();

/** Every list RPC whose request takes a cursor (so pages), by its client method's name: what `pages` must follow. */
export const PAGED_LISTS: readonly string[] = [AssetService, CollectionService, WebhookService]
  .flatMap((s) => s.methods.filter((m) => m.methodKind === "unary" && m.input.fields.some((f) => f.name === "cursor")).map((m) => m.localName))
  .sort();
