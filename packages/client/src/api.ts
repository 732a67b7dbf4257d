// What both entry points export besides createMarketDataClient: the client's
// types and helpers, and the contract's messages and services.
export * from "./client.js";
export * from "./gen/marketdata/v1/asset_service_pb.js";
export * from "./gen/marketdata/v1/collection_service_pb.js";
export * from "./gen/marketdata/v1/ingest_service_pb.js";
export * from "./gen/marketdata/v1/resources_pb.js";
export * from "./gen/marketdata/v1/webhook_service_pb.js";
