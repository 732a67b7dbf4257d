import type { DescMethodUnary, DescService, Message } from "@bufbuild/protobuf";
import { MethodOptions_IdempotencyLevel } from "@bufbuild/protobuf/wkt";
import type { ConnectRouter } from "@connectrpc/connect";
import { AssetService } from "../../gen/marketdata/v1/asset_service_pb.js";
import { CollectionService } from "../../gen/marketdata/v1/collection_service_pb.js";
import type { ReadRepositories } from "../store/ports.js";
import { createAssetService } from "./asset-service.js";
import { createCollectionService } from "./collection-service.js";

// Every service of the contract over one store, for every transport: RPC
// protocols register them on a Connect router; REST and Connect GET call a
// method's implementation directly (the implementations need no context).

export const SERVICES: readonly DescService[] = [AssetService, CollectionService];

export type UnaryImpl = (request: Message) => Message | Promise<Message>;

export interface ServiceSet {
  readonly services: readonly DescService[];
  /** Registers every service on a Connect router. */
  routes(router: ConnectRouter): void;
  /** The implementation of a unary method, for in-process calls. */
  unary(method: DescMethodUnary): UnaryImpl;
}

export function createServices(store: ReadRepositories): ServiceSet {
  const asset = createAssetService(store);
  const collection = createCollectionService(store);
  const impls = new Map<string, Record<string, unknown>>([
    [AssetService.typeName, asset as Record<string, unknown>],
    [CollectionService.typeName, collection as Record<string, unknown>],
  ]);
  return {
    services: SERVICES,
    routes(router) {
      router.service(AssetService, asset);
      router.service(CollectionService, collection);
    },
    unary(method) {
      const impl = impls.get(method.parent.typeName)?.[method.localName];
      if (typeof impl !== "function") throw new Error(`no implementation for ${method.parent.typeName}.${method.name}`);
      return impl as UnaryImpl;
    },
  };
}

/** Every unary method marked NO_SIDE_EFFECTS (served by GET and cached), with its procedure path. */
export function readOnlyUnaryMethods(services: readonly DescService[]): { method: DescMethodUnary; procedure: string }[] {
  return services.flatMap((service) =>
    service.methods
      .filter((m) => m.methodKind === "unary" && m.idempotency === MethodOptions_IdempotencyLevel.NO_SIDE_EFFECTS)
      .map((m) => ({ method: m as DescMethodUnary, procedure: `/${service.typeName}/${m.name}` })),
  );
}
