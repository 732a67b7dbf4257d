import { AssetService } from "../../gen/marketdata/v1/asset_service_pb.js";
import { CollectionService } from "../../gen/marketdata/v1/collection_service_pb.js";
import { IngestService } from "../../gen/marketdata/v1/ingest_service_pb.js";

/** Every RPC of the contract by name, from its descriptors: a client test that lists what it called is held to all of them. */
export const EVERY_RPC: readonly string[] = [AssetService, CollectionService, IngestService].flatMap((s) => s.methods.map((m) => m.name)).sort();
