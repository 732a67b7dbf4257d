import { createConnectTransport, createGrpcWebTransport } from "@connectrpc/connect-web";
import { createClientWith, type MarketDataClient, type MarketDataClientOptions } from "./client.js";

// @marketdata/client for browsers (and any runtime with fetch): Connect and
// gRPC-Web over fetch. Node resolves the package to node.ts instead, which
// adds gRPC.

export * from "./api.js";

export function createMarketDataClient(options: MarketDataClientOptions): MarketDataClient {
  return createClientWith(options, (protocol, baseUrl, interceptors, timeoutMs) => {
    // Reads (NO_SIDE_EFFECTS) as Connect GETs: cacheable, and nothing to upload when a request is refused.
    const common = { baseUrl, interceptors, defaultTimeoutMs: timeoutMs };
    if (protocol === "connect") return createConnectTransport({ ...common, useHttpGet: true });
    if (protocol === "grpc-web") return createGrpcWebTransport(common);
    throw new Error(`protocol "${protocol}" needs Node (HTTP/2); in a browser use "connect" or "grpc-web"`);
  });
}
