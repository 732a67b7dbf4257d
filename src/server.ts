import type http from "node:http";
import type { DescService } from "@bufbuild/protobuf";
import { type ConnectRouter, createRouterTransport, type Interceptor } from "@connectrpc/connect";
import { fastifyConnectPlugin } from "@connectrpc/connect-fastify";
import Fastify, { type FastifyInstance, type FastifyServerOptions } from "fastify";
import { AssetService } from "../gen/marketdata/v1/asset_service_pb.js";
import { CollectionService } from "../gen/marketdata/v1/collection_service_pb.js";
import { createAssetService } from "./service/asset-service.js";
import { createCollectionService } from "./service/collection-service.js";
import type { ReadStore } from "./store/read-store.js";
import { DualProtocolServer, type RequestHandler } from "./transport/dual-protocol-server.js";
import { apiKeyInterceptor, type KeyVerifier, maskInternalErrors } from "./transport/interceptors.js";
import { registerRestRoutes } from "./transport/rest/transcoder.js";

export interface ServerDeps {
  store: ReadStore;
  keys: KeyVerifier;
  logger?: FastifyServerOptions["logger"];
}

export const SERVICES: readonly DescService[] = [AssetService, CollectionService];

/**
 * The whole service as a Fastify instance, not yet listening: REST /v1,
 * Connect, gRPC-Web and gRPC (HTTP/2 prior knowledge) on one port.
 */
export async function buildServer(deps: ServerDeps): Promise<FastifyInstance> {
  const app = Fastify({
    logger: deps.logger ?? false,
    // Fastify's types know one server kind; this one serves HTTP/1.1 and h2c.
    serverFactory: (handler) => new DualProtocolServer(handler as RequestHandler) as unknown as http.Server,
    // While closing, new requests on kept-alive connections get a 503
    // rather than work that the shutdown would cut short.
    return503OnClosing: true,
  });

  const routes = (router: ConnectRouter) => {
    router.service(AssetService, createAssetService(deps.store));
    router.service(CollectionService, createCollectionService(deps.store));
  };
  const interceptors: Interceptor[] = [maskInternalErrors(app.log), apiKeyInterceptor(deps.keys)];

  await app.register(fastifyConnectPlugin, { routes, interceptors });
  registerRestRoutes(app, SERVICES, createRouterTransport(routes, { router: { interceptors } }));
  return app;
}
