import { fromBinary } from "@bufbuild/protobuf";
import { CollectionRecordSchema } from "../gen/marketdata/v1/ingest_service_pb.js";
// field 2 name: tag (2<<3|2)=0x12, len 2, bytes ff fe
const bad = new Uint8Array([0x12, 0x02, 0xff, 0xfe]);
try { console.log(JSON.stringify(fromBinary(CollectionRecordSchema, bad))); } catch (e) { console.log("threw", (e as Error).message); }
console.log(CollectionRecordSchema.fields.map(f => [f.name, (f as any).utf8Validation]));
