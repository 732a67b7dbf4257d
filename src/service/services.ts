import type { DescMethodServerStreaming, DescMethodUnary, DescService, Message } from "@bufbuild/protobuf";
import { MethodOptions_IdempotencyLevel } from "@bufbuild/protobuf/wkt";
import { Code, ConnectError, type ConnectRouter, type HandlerContext } from "@connectrpc/connect";
import { AssetService } from "../../gen/marketdata/v1/asset_service_pb.js";
import { CollectionService } from "../../gen/marketdata/v1/collection_service_pb.js";
import { IngestService } from "../../gen/marketdata/v1/ingest_service_pb.js";
import { WebhookService } from "../../gen/marketdata/v1/webhook_service_pb.js";
import { StoreReadOnlyError } from "../store/ports/errors.js";
import type { ReadRepositories } from "../store/ports/reads.js";
import type { IngestWriter } from "../store/ports/writes.js";
import { createIngestService, Ingest, type IngestOptions } from "./ingest-service.js";
import { createAssetService } from "./asset-service.js";
import { createCollectionService } from "./collection-service.js";
import { Exporter } from "./export.js";
import { FeedHub } from "./feed-hub.js";
import type { LocalCall } from "./local-call.js";
import type { WebhookAdmin } from "./webhooks/admin.js";
import type { WebhookDeps } from "./webhooks/webhook-service.js";
import { createWebhookService } from "./webhooks/webhook-service.js";

// Every service of the contract over one store, for every transport: RPC
// protocols register them on a Connect router; REST and Connect GET call a
// method's implementation directly (the implementations need no context).
// Reads go to the store's read repositories, writes (IngestService) to its
// writer, webhook administration (WebhookService) to the webhooks' store.

export const SERVICES: readonly DescService[] = [AssetService, CollectionService, IngestService, WebhookService];

/** The writer of a server given none (read-only tests and tools): every write is refused as such. */
const NO_WRITER: IngestWriter = {
  write: () => Promise.reject(new StoreReadOnlyError("this server takes no writes")),
  close: async () => {},
};

/** A unary method called in process; `call` says which ready list rows its codec splices (local-call.ts). */
export type UnaryImpl = (request: Message, call?: LocalCall) => Message | Promise<Message>;
export type ServerStreamImpl = (request: Message, context: HandlerContext) => AsyncIterable<Message>;

export interface ServiceSet {
  readonly services: readonly DescService[];
  /** Registers every service on a Connect router. */
  routes(router: ConnectRouter): void;
  /** The implementation of a unary method, for in-process calls. */
  unary(method: DescMethodUnary): UnaryImpl;
  /** The implementation of a server-streaming method, for in-process calls (Server-Sent Events). */
  serverStream(method: DescMethodServerStreaming): ServerStreamImpl;
  /** The ingest path, for transports that carry batches in their own form (REST NDJSON). */
  readonly ingest: Ingest;
  /** A collection's records as import lines (GET /v1/export/KIND). */
  readonly export: Exporter;
}

export function createServices(
  store: ReadRepositories,
  writer: IngestWriter = NO_WRITER,
  feeds: FeedHub = new FeedHub(store),
  ingestOptions: IngestOptions = {},
  webhooks?: WebhookDeps,
): ServiceSet {
  const asset = createAssetService(store, feeds);
  const collection = createCollectionService(store, feeds);
  // Its commits are told to whoever subscribed to ingestOptions.notices (the live feeds, the webhooks: the composition root).
  const ingest = new Ingest(writer, ingestOptions);
  const ingestService = createIngestService(ingest);
  const webhookService = createWebhookService(webhooks?.admin ?? NO_WEBHOOKS, webhooks?.stats);
  const impls = new Map<string, Record<string, unknown>>([
    [AssetService.typeName, asset as Record<string, unknown>],
    [CollectionService.typeName, collection as Record<string, unknown>],
    [IngestService.typeName, ingestService as Record<string, unknown>],
    [WebhookService.typeName, webhookService as Record<string, unknown>],
  ]);
  const implOf = (method: DescMethodUnary | DescMethodServerStreaming): unknown => {
    const impl = impls.get(method.parent.typeName)?.[method.localName];
    if (typeof impl !== "function") throw new Error(`no implementation for ${method.parent.typeName}.${method.name}`);
    return impl;
  };
  return {
    services: SERVICES,
    routes(router) {
      router.service(AssetService, asset);
      router.service(CollectionService, collection);
      router.service(IngestService, ingestService);
      router.service(WebhookService, webhookService);
    },
    unary: (method) => implOf(method) as UnaryImpl,
    serverStream: (method) => implOf(method) as ServerStreamImpl,
    ingest,
    export: new Exporter(store),
  };
}

/** Every procedure path of `services` ("/pkg.Service/Method"). */
export function procedures(services: readonly DescService[]): string[] {
  return services.flatMap((s) => s.methods.map((m) => `/${s.typeName}/${m.name}`));
}

/**
 * Reads whose answer depends on the clock as well as the store: an offer
 * stands until its expiresAt (decisions.md, "Offers"), with no commit to
 * say so (the activity feed shows offers too); the collections list's
 * floor change compares with the floor a day before now. Never answered from the response cache (each is a few seeks).
 */
export const CLOCK_DEPENDENT_PROCEDURES: ReadonlySet<string> = new Set([
  `/${AssetService.typeName}/ListOffers`,
  `/${CollectionService.typeName}/GetCollectionMarket`,
  `/${CollectionService.typeName}/ListCollectionTraits`,
  `/${CollectionService.typeName}/ListCollections`,
  `/${CollectionService.typeName}/ListCollectionActivity`,
]);

/** The procedures of writes (IngestService): a key with the ingest scope, their own rate limit and message size. */
export const INGEST_PROCEDURES: ReadonlySet<string> = new Set(procedures([IngestService]));

/** The operator's procedures (WebhookService): a key with the admin scope, admitted as writes. */
export const ADMIN_PROCEDURES: ReadonlySet<string> = new Set(procedures([WebhookService]));

/** Webhook administration on a server given no webhooks store (tests of other things): every call refused as unavailable here. */
const NO_WEBHOOKS = new Proxy({} as WebhookAdmin, {
  get: () => () => Promise.reject(new ConnectError("this server manages no webhooks", Code.Unimplemented)),
});

/** Every server-streaming method (the live feeds): read-only, long-lived, never cached. */
export function serverStreamingMethods(services: readonly DescService[]): { method: DescMethodServerStreaming; procedure: string }[] {
  return services.flatMap((service) =>
    service.methods
      .filter((m): m is DescMethodServerStreaming => m.methodKind === "server_streaming")
      .map((method) => ({ method, procedure: `/${service.typeName}/${method.name}` })),
  );
}

/** Every unary method marked NO_SIDE_EFFECTS (served by GET and cached), with its procedure path. */
export function readOnlyUnaryMethods(services: readonly DescService[]): { method: DescMethodUnary; procedure: string }[] {
  return services.flatMap((service) =>
    service.methods
      .filter((m) => m.methodKind === "unary" && m.idempotency === MethodOptions_IdempotencyLevel.NO_SIDE_EFFECTS)
      .map((m) => ({ method: m as DescMethodUnary, procedure: `/${service.typeName}/${m.name}` })),
  );
}
