import type { DescService } from "@bufbuild/protobuf";
import { ServerReflection as ReflectionV1 } from "../../../gen/grpc/reflection/v1/reflection_pb.js";
import { ServerReflection as ReflectionV1Alpha } from "../../../gen/grpc/reflection/v1alpha/reflection_pb.js";
import { Health } from "../../../gen/health/v1/health_pb.js";

/**
 * The services served without an API key, declared once: health and
 * reflection describe the server, not its data (they count against the
 * caller's address limit instead: rpc/gate.ts).
 */
export const PUBLIC_SERVICES: readonly DescService[] = [Health, ReflectionV1, ReflectionV1Alpha];

/** Their type names, for the RPC interceptors. */
export const PUBLIC_SERVICE_NAMES: ReadonlySet<string> = new Set(PUBLIC_SERVICES.map((s) => s.typeName));
