import { createConnectTransport, createGrpcTransport, createGrpcWebTransport } from "@connectrpc/connect-node";
import { createClientWith, type MarketDataClient, type MarketDataClientOptions } from "./client.js";

// @marketdata/client on Node: Connect, gRPC-Web and gRPC over Node's own
// HTTP stack (connect-node; gRPC over HTTP/2, Connect over HTTP/1.1).

export * from "./api.js";

export function createMarketDataClient(options: MarketDataClientOptions): MarketDataClient {
  return createClientWith(options, (protocol, baseUrl, interceptors, timeoutMs) => {
    // Reads (NO_SIDE_EFFECTS) as Connect GETs: cacheable, and nothing to upload when a request is refused.
    const common = { baseUrl, interceptors, defaultTimeoutMs: timeoutMs };
    if (protocol === "grpc") return createGrpcTransport(common);
    if (protocol === "grpc-web") return createGrpcWebTransport({ ...common, httpVersion: "1.1" });
    return createConnectTransport({ ...common, httpVersion: "1.1", useHttpGet: true });
  });
}
