import { create, type DescFile, type DescService, toBinary } from "@bufbuild/protobuf";
import { nestedTypes } from "@bufbuild/protobuf/reflect";
import { FileDescriptorProtoSchema } from "@bufbuild/protobuf/wkt";
import type { ConnectRouter } from "@connectrpc/connect";
import * as v1 from "../../../gen/grpc/reflection/v1/reflection_pb.js";
import * as v1alpha from "../../../gen/grpc/reflection/v1alpha/reflection_pb.js";

// gRPC server reflection (grpc.reflection.v1 and v1alpha: today's tools use
// one or the other), built from the generated descriptors: no proto files
// at run time. With it, buf curl, grpcurl, Postman and grpcui find the
// services and their messages by themselves. A bidirectional stream: each
// request is answered in order.
//
// Answers: file_by_filename and file_containing_symbol return the file and
// every file it imports, transitively (clients would ask for them next);
// file_containing_extension and all_extension_numbers_of_type look
// extensions up among those files; list_services lists every service.

const NOT_FOUND = 5;
const INVALID_ARGUMENT = 3;

/** What both protocol versions ask, in v1's shape (v1alpha's messages have the same fields). */
type Request = v1.ServerReflectionRequest;
type Response = Omit<v1.ServerReflectionResponse, "$typeName" | "originalRequest"> & { originalRequest?: Request };

export class ReflectionIndex {
  readonly #files = new Map<string, DescFile>();
  readonly #symbols = new Map<string, DescFile>();
  /** Extensions by extendee type name, then field number. */
  readonly #extensions = new Map<string, Map<number, DescFile>>();
  readonly #services: string[];

  constructor(services: readonly DescService[]) {
    this.#services = services.map((s) => s.typeName).sort();
    const add = (file: DescFile) => {
      if (this.#files.has(file.proto.name)) return;
      this.#files.set(file.proto.name, file);
      for (const type of nestedTypes(file)) {
        this.#symbols.set(type.typeName, file);
        if (type.kind === "service") for (const m of type.methods) this.#symbols.set(`${type.typeName}.${m.name}`, file);
        if (type.kind === "extension") {
          const byNumber = this.#extensions.get(type.extendee.typeName) ?? new Map<number, DescFile>();
          byNumber.set(type.number, file);
          this.#extensions.set(type.extendee.typeName, byNumber);
        }
      }
      for (const dep of file.dependencies) add(dep);
    };
    for (const s of services) add(s.file);
  }

  answer(req: Request): Response {
    const r = req.messageRequest;
    const base = { validHost: req.host, originalRequest: req };
    switch (r.case) {
      case "fileByFilename":
        return this.#withFile(base, this.#files.get(r.value), `file ${r.value}`);
      case "fileContainingSymbol":
        return this.#withFile(base, this.#symbols.get(r.value.replace(/^\./, "")), `symbol ${r.value}`);
      case "fileContainingExtension":
        return this.#withFile(
          base,
          this.#extensions.get(r.value.containingType)?.get(r.value.extensionNumber),
          `extension ${r.value.extensionNumber} of ${r.value.containingType}`,
        );
      case "allExtensionNumbersOfType": {
        if (!this.#symbols.has(r.value)) return error(base, NOT_FOUND, `type ${r.value} not found`);
        const numbers = [...(this.#extensions.get(r.value)?.keys() ?? [])].sort((a, b) => a - b);
        return {
          ...base,
          messageResponse: { case: "allExtensionNumbersResponse", value: create(v1.ExtensionNumberResponseSchema, { baseTypeName: r.value, extensionNumber: numbers }) },
        };
      }
      case "listServices":
        return {
          ...base,
          messageResponse: {
            case: "listServicesResponse",
            value: create(v1.ListServiceResponseSchema, { service: this.#services.map((name) => create(v1.ServiceResponseSchema, { name })) }),
          },
        };
      default:
        return error(base, INVALID_ARGUMENT, "empty reflection request");
    }
  }

  #withFile(base: Pick<Response, "validHost" | "originalRequest">, file: DescFile | undefined, what: string): Response {
    if (file === undefined) return error(base, NOT_FOUND, `${what} not found`);
    const closure: DescFile[] = [];
    const seen = new Set<string>();
    const visit = (f: DescFile) => {
      if (seen.has(f.proto.name)) return;
      seen.add(f.proto.name);
      closure.push(f);
      for (const d of f.dependencies) visit(d);
    };
    visit(file);
    return {
      ...base,
      messageResponse: {
        case: "fileDescriptorResponse",
        value: create(v1.FileDescriptorResponseSchema, { fileDescriptorProto: closure.map((f) => toBinary(FileDescriptorProtoSchema, f.proto)) }),
      },
    };
  }
}

function error(base: Pick<Response, "validHost" | "originalRequest">, errorCode: number, errorMessage: string): Response {
  return { ...base, messageResponse: { case: "errorResponse", value: create(v1.ErrorResponseSchema, { errorCode, errorMessage }) } };
}

/** Registers both versions of the reflection service, describing `services` (and themselves). */
export function reflectionRoutes(router: ConnectRouter, services: readonly DescService[]): void {
  const index = new ReflectionIndex([...services, v1.ServerReflection, v1alpha.ServerReflection]);
  router.service(v1.ServerReflection, {
    async *serverReflectionInfo(requests) {
      for await (const req of requests) yield index.answer(req) as v1.ServerReflectionResponse;
    },
  });
  router.service(v1alpha.ServerReflection, {
    async *serverReflectionInfo(requests) {
      // Same fields, other type names: the request is read as v1's, the answer written as v1alpha's.
      for await (const req of requests) {
        const a = index.answer(req as unknown as Request);
        yield {
          validHost: a.validHost,
          originalRequest: req,
          messageResponse: a.messageResponse,
        } as unknown as v1alpha.ServerReflectionResponse;
      }
    },
  });
}
