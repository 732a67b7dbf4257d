import {
  create,
  createFileRegistry,
  type DescEnum,
  type DescField,
  type DescMessage,
  type DescMethod,
  type DescService,
  ScalarType,
} from "@bufbuild/protobuf";
import { CodeGeneratorResponse_Feature, CodeGeneratorResponseSchema, FileDescriptorSetSchema } from "@bufbuild/protobuf/wkt";
import { getComments, type Plugin, runNodeJs } from "@bufbuild/protoplugin";
import { MAX_EPOCH_SECONDS, MARKETPLACE_RE } from "../src/domain/formats.js";
import { DEFAULT_LIMIT, MAX_ADDRESSES, MAX_ASSET_IDS, MAX_LIMIT } from "../src/service/params.js";
import { MAX_BATCH_BYTES, MAX_BATCH_RECORDS } from "../src/domain/ingest-limits.js";
import { type NdjsonRoute, ndjsonRoutes, restRoutes, type SseRoute, sseRoutes } from "../src/transport/rest/http-rules.js";
import { HEARTBEAT_SECONDS, RETRY_MS, SSE_KEY_PARAM } from "../src/service/feed-limits.js";
import { onlyWhenAsked, shortEnumName } from "../src/domain/wire/json-dialect.js";
import { CHAINS, DEFAULT_CHAIN } from "../src/domain/chains.js";
import { declarationOf, isKind } from "../src/domain/kinds/index.js";

// protoc-gen-openapi: the OpenAPI 3.1 document of the /v1 routes, written by
// `buf generate` to gen/openapi.json (CI fails when it drifts, like the rest
// of gen/). Everything comes from the contract: routes from the
// google.api.http rules (read by the same code the server routes with),
// parameters and schemas from the messages and their comments, in the REST
// JSON dialect of decisions.md (json-dialect.ts: every field present, 64-bit
// integers as numbers, short enum names, unset messages as null). The bounds
// the services enforce come from the same constants they use.

const BAYC = "0xbc4ca0eda7647a8ab7c2061c2e118a18a936f13d";
const CONNECT_CODES = [
  "invalid_argument",
  "unauthenticated",
  "permission_denied",
  "failed_precondition",
  "not_found",
  "resource_exhausted",
  "unavailable",
  "internal",
] as const;

type Schema = Record<string, unknown>;

/** Query parameters' bounds and examples, by proto field name: what params.ts enforces. */
function parameterSchema(field: DescField, base: Schema): Schema {
  switch (field.name) {
    case "contract_address": {
      const one = { type: "string", pattern: "^0x[0-9a-fA-F]{40}$", examples: [BAYC] };
      return field.fieldKind === "list" ? { type: "array", items: one, minItems: 1, maxItems: MAX_ADDRESSES } : one;
    }
    case "asset_id": {
      const one = { type: "string", pattern: "^(0|[1-9][0-9]{0,77})$", examples: ["7495"] };
      return field.fieldKind === "list" ? { type: "array", items: one, maxItems: MAX_ASSET_IDS } : one;
    }
    case "limit":
      return { type: "integer", minimum: 1, maximum: MAX_LIMIT, default: DEFAULT_LIMIT };
    case "since":
    case "until":
      return { type: "integer", minimum: 0, maximum: Number(MAX_EPOCH_SECONDS) - 1, examples: [1_700_000_000] };
    case "marketplace":
      return { type: "string", pattern: MARKETPLACE_RE.source, examples: ["OPENSEA"] };
    default:
      return base;
  }
}

function scalarSchema(type: ScalarType): Schema {
  switch (type) {
    case ScalarType.INT64:
    case ScalarType.SINT64:
    case ScalarType.SFIXED64:
      return { type: "integer", format: "int64" };
    case ScalarType.UINT64:
    case ScalarType.FIXED64:
      return { type: "integer", format: "int64", minimum: 0 };
    case ScalarType.INT32:
    case ScalarType.SINT32:
    case ScalarType.SFIXED32:
      return { type: "integer", format: "int32" };
    case ScalarType.UINT32:
    case ScalarType.FIXED32:
      return { type: "integer", format: "int32", minimum: 0 };
    case ScalarType.DOUBLE:
    case ScalarType.FLOAT:
      return { type: "number" };
    case ScalarType.BOOL:
      return { type: "boolean" };
    case ScalarType.BYTES:
      return { type: "string", contentEncoding: "base64" };
    default:
      return { type: "string" };
  }
}

function is64Bit(type: ScalarType): boolean {
  return [ScalarType.INT64, ScalarType.SINT64, ScalarType.SFIXED64, ScalarType.UINT64, ScalarType.FIXED64].includes(type);
}

function enumValues(e: DescEnum): string[] {
  return e.values.filter((v) => v.number !== 0).map((v) => shortEnumName(e, v.name));
}

function isFlag(field: DescField): boolean {
  return (field.jsonName === "successful" || field.jsonName === "success") && field.parent.name.endsWith("Response");
}

function describe(desc: DescField | DescMessage | DescMethod | DescService): string | undefined {
  const text = getComments(desc).leading?.trim();
  return text ? text.replace(/\s*\n\s*/g, " ") : undefined;
}

class Document {
  readonly schemas: Record<string, Schema>;

  /**
   * protoJson: the messages as Connect's JSON writes them (the proto3 JSON
   * mapping: 64-bit integers as strings, default values left out), for the
   * RPC-only services; otherwise the /v1 dialect.
   */
  constructor(readonly protoJson = false, schemas: Record<string, Schema> = {}) {
    this.schemas = schemas;
  }

  ref(message: DescMessage): Schema {
    const name = message.typeName.replace(/^marketdata\.v1\./, "").replace(/\./g, "_");
    if (!(name in this.schemas)) {
      this.schemas[name] = {}; // placeholder: recursive messages (a tweet's retweeted tweet)
      this.schemas[name] = this.#message(message);
    }
    return { $ref: `#/components/schemas/${name}` };
  }

  /** A response field in the REST dialect. */
  #field(field: DescField): Schema {
    const doc = describe(field);
    const withDoc = (s: Schema) => (doc ? { ...s, description: doc } : s);
    switch (field.fieldKind) {
      case "scalar": {
        const s = this.protoJson && is64Bit(field.scalar) ? { type: "string", format: "int64" } : scalarSchema(field.scalar);
        // Null when not set, unless the field is left out instead (it is then not required: #message).
        return withDoc(field.proto.proto3Optional && !onlyWhenAsked(field) ? { ...s, type: [s.type, "null"] } : s);
      }
      case "enum":
        return withDoc({ type: "string", enum: enumValues(field.enum) });
      case "message":
        // Unset singular messages are written as null (Connect's JSON leaves them out).
        return withDoc(this.protoJson ? this.ref(field.message) : { anyOf: [this.ref(field.message), { type: "null" }] });
      case "list":
        if (field.listKind === "message") return withDoc({ type: "array", items: this.ref(field.message) });
        if (field.listKind === "enum") return withDoc({ type: "array", items: { type: "string", enum: enumValues(field.enum) } });
        return withDoc({ type: "array", items: scalarSchema(field.scalar) });
      case "map":
        return withDoc({ type: "object", additionalProperties: field.mapKind === "message" ? this.ref(field.message) : {} });
    }
  }

  #message(message: DescMessage): Schema {
    const doc = describe(message);
    return {
      type: "object",
      ...(doc ? { description: doc } : {}),
      // The dialect writes every field, defaults included; Connect's JSON leaves defaults out.
      required: this.protoJson ? [] : message.fields.filter((f) => !onlyWhenAsked(f)).map((f) => f.jsonName),
      properties: Object.fromEntries(
        message.fields.map((f) => [
          f.jsonName,
          // A response's success flag is 1 in every 200 answer (errors have their own schema with 0).
          isFlag(f) ? { type: "integer", const: 1, description: "1: the request succeeded" } : this.#field(f),
        ]),
      ),
      additionalProperties: false,
    };
  }

  /**
   * One NDJSON line of an ingest route: the record message in the REST
   * dialect, which is the line `marketdata import KIND` reads, with the two
   * shapes where a line is not its RPC record: a tweet's line is the Tweet
   * with its collection's address beside its fields (the RPC nests it), and
   * a token attribute's value is the JSON value itself (the RPC's oneof).
   */
  line(message: DescMessage, kind: string): Schema {
    const schema = this.#line(message) as { required: string[]; properties: Record<string, Schema> };
    // What the kind's declaration lets a line leave out, and the chain it may name (docs/chains.md).
    if (!isKind(kind)) throw new Error(`${message.typeName}: ${kind} is no importable kind`);
    const { optional, fields } = declarationOf(kind).shape;
    // A field the line names as its proto field, not in camel case (a token's OpenSea metadata: animation_url).
    const lineName = new Map(message.fields.filter((f) => f.jsonName !== f.name && !fields.includes(f.jsonName) && fields.includes(f.name)).map((f) => [f.jsonName, f.name]));
    const named = (name: string) => lineName.get(name) ?? name;
    return {
      ...schema,
      required: schema.required.map(named).filter((name) => !optional.includes(name)),
      properties: {
        ...Object.fromEntries(Object.entries(schema.properties).map(([name, s]) => [named(name), s])),
        ...(fields.includes("chain")
          ? { chain: { type: "string", enum: [...CHAINS], default: DEFAULT_CHAIN, description: "Its collection's chain; the batch's (?chain=) when absent, else ethereum" } }
          : {}),
      },
    };
  }

  #line(message: DescMessage): Schema {
    const tweet = message.fields.find((f) => f.name === "tweet" && f.fieldKind === "message");
    if (tweet?.message !== undefined) {
      const base = this.#message(tweet.message) as { required: string[]; properties: Record<string, Schema> };
      const address = message.fields.find((f) => f.name === "contract_address")!;
      return {
        ...base,
        ...(describe(message) ? { description: describe(message) } : {}),
        required: [address.jsonName, ...base.required],
        properties: { [address.jsonName]: this.#field(address), ...base.properties },
      };
    }
    const attributes = message.fields.find((f) => f.name === "attributes");
    if (attributes !== undefined) {
      const base = this.#message(message) as { properties: Record<string, Schema> };
      return {
        ...base,
        required: message.fields.filter((f) => f.name !== "current_owner").map((f) => f.jsonName),
        properties: {
          ...base.properties,
          [attributes.jsonName]: {
            type: "array",
            items: {
              type: "object",
              required: ["trait_type", "value"],
              properties: {
                trait_type: { type: "string" },
                value: { type: ["string", "number", "boolean"] },
                display_type: { type: "string", default: "" },
              },
              additionalProperties: false,
            },
          },
        },
      };
    }
    // Inline, not the read answer's schema: a line may leave out what its declaration defaults (line()).
    return this.#message(message);
  }

  /** A query parameter: the names, repetition and enum spellings query.ts accepts. */
  parameter(field: DescField): Schema {
    let base: Schema;
    if (field.fieldKind === "enum") base = { type: "string", enum: enumValues(field.enum) };
    else if (field.fieldKind === "scalar") base = scalarSchema(field.scalar);
    else if (field.fieldKind === "list" && field.listKind === "scalar") base = { type: "array", items: scalarSchema(field.scalar) };
    else throw new Error(`${field.parent.typeName}.${field.name}: only scalar, enum and repeated scalar fields can be query parameters`);
    const doc = describe(field);
    return {
      name: field.jsonName,
      in: "query",
      required: field.name === "contract_address",
      ...(doc ? { description: doc } : {}),
      // Repeated values: repeated keys (and, in this API, comma-separated lists).
      ...(field.fieldKind === "list" ? { style: "form", explode: true } : {}),
      schema: parameterSchema(field, base),
    };
  }
}

function openApi(services: DescService[], rpcOnly: DescService[], payload: DescMessage | undefined): object {
  const doc = new Document();
  const paths: Record<string, object> = {};
  const flags = new Set<string>();
  for (const { method, path } of restRoutes(services)) {
    const flag = method.output.fields.find(isFlag)?.jsonName ?? "success";
    flags.add(flag);
    const error = errorResponse(`Error_${flag}`);
    const rate = {
      "RateLimit-Limit": { $ref: "#/components/headers/RateLimit-Limit" },
      "RateLimit-Remaining": { $ref: "#/components/headers/RateLimit-Remaining" },
      "RateLimit-Reset": { $ref: "#/components/headers/RateLimit-Reset" },
    };
    const summary = describe(method);
    paths[path.replace(/:([a-z_]+)/g, "{$1}")] = {
      get: {
        operationId: method.name,
        tags: [method.parent.name],
        ...(summary ? { summary } : {}),
        description: `${summary ?? method.name} Also served as the RPC ${method.parent.typeName}/${method.name} (Connect, gRPC, gRPC-Web).`,
        parameters: method.input.fields.map((f) => doc.parameter(f)),
        responses: {
          "200": {
            description: `${flag}: 1 and the data`,
            headers: { ...rate, ETag: { $ref: "#/components/headers/ETag" } },
            content: { "application/json": { schema: doc.ref(method.output) } },
          },
          "304": { description: "Not modified (If-None-Match matched the ETag)" },
          "400": error("invalid_argument: a parameter is malformed, out of range or unknown"),
          "401": error("unauthenticated: the x-api-key header is missing, unknown or revoked"),
          "404": error("not_found: no such collection"),
          "429": { ...error("resource_exhausted: over the rate limit"), headers: { ...rate, "Retry-After": { $ref: "#/components/headers/Retry-After" } } },
          "503": error("unavailable: the server is shutting down; retry on another"),
        },
      },
    };
  }
  for (const route of ndjsonRoutes(services)) paths[route.path] = ingestOperation(doc, route);
  for (const route of sseRoutes(services)) {
    const flag = "success";
    flags.add(flag);
    paths[route.path] = sseOperation(doc, route, flag);
  }
  // The RPC-only services (webhook administration): Connect POST paths, messages in Connect's JSON.
  const rpcDoc = new Document(true, doc.schemas);
  for (const service of rpcOnly) {
    for (const method of service.methods) paths[`/${service.typeName}/${method.name}`] = rpcOperation(rpcDoc, method);
  }
  for (const flag of flags) {
    doc.schemas[`Error_${flag}`] = {
      type: "object",
      required: [flag, "code", "message"],
      properties: {
        [flag]: { type: "integer", const: 0 },
        code: { type: "string", enum: [...CONNECT_CODES] },
        message: { type: "string", description: "What went wrong; quotes at most 100 characters of a value" },
      },
      additionalProperties: false,
      examples: [{ [flag]: 0, code: "invalid_argument", message: 'contractAddress must be 0x followed by 40 hex characters, got "nope"' }],
    };
  }
  const header = (description: string, schema: Schema) => ({ description, schema });
  return {
    openapi: "3.1.0",
    info: {
      title: "Collection Market Data API",
      version: "v1",
      description:
        "NFT collection market data: appraisals, rarity, sales, listings, stats, influencers, tweets and scores. " +
        "Every endpoint needs an API key in the x-api-key header. Amounts are wei as decimal strings.",
    },
    servers: [{ url: "/" }],
    security: [{ apiKey: [] }],
    tags: [...services, ...rpcOnly].map((s) => ({ name: s.name, ...(describe(s) ? { description: describe(s) } : {}) })),
    paths,
    ...(payload === undefined ? {} : { webhooks: { events: webhookOperation(doc, payload) } }),
    components: {
      securitySchemes: {
        apiKey: { type: "apiKey", in: "header", name: "x-api-key" },
        // The live feeds only: a browser's EventSource cannot send headers.
        apiKeyQuery: { type: "apiKey", in: "query", name: SSE_KEY_PARAM, description: "The API key in the URL, for an EventSource (the feeds only; request logs redact it)" },
      },
      headers: {
        "RateLimit-Limit": header("Requests allowed in the current one-second window", { type: "integer" }),
        "RateLimit-Remaining": header("Requests left in the current window", { type: "integer" }),
        "RateLimit-Reset": header("Seconds until the window resets", { type: "integer" }),
        "Retry-After": header("Seconds to wait before retrying", { type: "integer" }),
        ETag: header("Strong validator of the body; send it back in If-None-Match", { type: "string" }),
      },
      schemas: Object.fromEntries(Object.entries(doc.schemas).sort(([a], [b]) => a.localeCompare(b))),
    },
  };
}

/** POST /v1/ingest/KIND: NDJSON of the kind's records in, IngestResponse out. */
function ingestOperation(doc: Document, { method, body, path }: NdjsonRoute): object {
  const summary = describe(method);
  const error = errorResponse("IngestError");
  doc.schemas.IngestError ??= {
    type: "object",
    required: ["code", "message"],
    properties: {
      code: { type: "string", enum: [...CONNECT_CODES] },
      message: { type: "string" },
      accepted: { type: "integer", const: 0, description: "Present when the batch was refused for invalid records: nothing was written" },
      duplicates: { type: "integer", const: 0 },
      rejected: { type: "array", items: { $ref: "#/components/schemas/IngestRejection" } },
    },
    additionalProperties: false,
  };
  return {
    post: {
      operationId: method.name,
      tags: [method.parent.name],
      ...(summary ? { summary } : {}),
      description:
        `${summary ?? method.name} The body is NDJSON: one record per line, as \`marketdata import\` reads them ` +
        `(at most ${MAX_BATCH_RECORDS} records and ${MAX_BATCH_BYTES} bytes); blank lines are skipped but counted. ` +
        `A batch with an invalid record writes nothing unless skipInvalid is true. Needs a key with the ingest or admin scope. ` +
        `Also served as the RPC ${method.parent.typeName}/${method.name} (Connect, gRPC, gRPC-Web).`,
      parameters: method.input.fields.filter((f) => f !== body).map((f) => doc.parameter(f)),
      requestBody: {
        required: true,
        description: "One record per line; each line is a JSON object of this schema",
        content: { "application/x-ndjson": { schema: doc.line(body.message, path.slice(path.lastIndexOf("/") + 1)) } },
      },
      responses: {
        "200": {
          description: "The batch was committed: what was new or changed (accepted), what the store already held (duplicates), and the invalid lines skipped",
          content: { "application/json": { schema: doc.ref(method.output) } },
        },
        "400": error(
          "invalid_argument: invalid records (each in rejected, by line; nothing written), too many records, or an unknown parameter; " +
            "failed_precondition: this server cannot write (a PostgreSQL standby): send writes to a server on the primary",
        ),
        "401": error("unauthenticated: the x-api-key header is missing, unknown or revoked"),
        "403": error("permission_denied: the key may only read"),
        "413": error("resource_exhausted: the body is larger than a batch may be"),
        "415": error("invalid_argument: the body is not application/x-ndjson"),
        "429": error("resource_exhausted: over the key's ingest rate limit"),
        "503": error("unavailable: the store could not take the write now (busy, unreachable, shutting down); retry"),
      },
    },
  };
}

/** GET …/stream: Server-Sent Events, one per message of the server-streaming RPC (src/transport/rest/sse.ts). */
function sseOperation(doc: Document, { method }: SseRoute, flag: string): object {
  const summary = describe(method);
  const record = method.output.fields.find((f) => f.fieldKind === "message")!;
  const error = errorResponse(`Error_${flag}`);
  return {
    get: {
      operationId: method.name,
      tags: [method.parent.name],
      ...(summary ? { summary } : {}),
      description:
        `${summary ?? method.name} A text/event-stream: each event's data is one ${record.message!.name} in the /v1 JSON dialect ` +
        `(the element of the list endpoint's data), its id the resume token. The stream opens with an id-only event (the position it starts at), ` +
        `sends a comment every ${HEARTBEAT_SECONDS} s, and sets retry: ${RETRY_MS}. An EventSource resumes by itself (Last-Event-ID); ` +
        "any client may pass the last id as cursor. A stream that must end (the server shuts down, the client reads too slowly) " +
        'sends an event "end" whose data is {code, message, cursor} before closing. ' +
        `Also served as the RPC ${method.parent.typeName}/${method.name} (Connect, gRPC, gRPC-Web).`,
      security: [{ apiKey: [] }, { apiKeyQuery: [] }],
      parameters: [
        ...method.input.fields.map((f) => doc.parameter(f)),
        {
          name: "Last-Event-ID",
          in: "header",
          required: false,
          description: "The id of the last event received (sent by an EventSource when it reconnects); wins over cursor",
          schema: { type: "string" },
        },
      ],
      responses: {
        "200": {
          description: "The stream of events",
          content: {
            "text/event-stream": {
              schema: { type: "string", description: `Server-Sent Events; each event's data: a ${record.message!.name}` },
              "x-event-data": doc.ref(record.message!),
            },
          },
        },
        "400": error("invalid_argument: a parameter or the cursor is malformed; failed_precondition: the cursor is older than the data this store keeps"),
        "401": error("unauthenticated: the x-api-key header is missing, unknown or revoked"),
        "404": error("not_found: no such collection"),
        "429": error("resource_exhausted: over the rate limit, or too many streams open for the key or the server"),
        "503": error("unavailable: the server is shutting down; retry on another"),
      },
    },
  };
}

/** A response of `description` whose body is the JSON error schema `schema`. */
function errorResponse(schema: string): (description: string) => object {
  return (description) => ({ description, content: { "application/json": { schema: { $ref: `#/components/schemas/${schema}` } } } });
}

/** A unary RPC of a service with no REST routes, as Connect's POST with a JSON body. */
function rpcOperation(doc: Document, method: DescMethod): object {
  const summary = describe(method);
  const error = errorResponse("ConnectError");
  doc.schemas.ConnectError ??= {
    type: "object",
    required: ["code", "message"],
    properties: { code: { type: "string", enum: [...CONNECT_CODES] }, message: { type: "string" } },
  };
  return {
    post: {
      operationId: method.name,
      tags: [method.parent.name],
      ...(summary ? { summary } : {}),
      description:
        `${summary ?? method.name} The Connect protocol (JSON; 64-bit integers as strings); also gRPC and gRPC-Web at this path. ` +
        "Needs a key with the admin scope.",
      requestBody: { required: true, content: { "application/json": { schema: doc.ref(method.input) } } },
      responses: {
        "200": { description: "The answer", content: { "application/json": { schema: doc.ref(method.output) } } },
        "400": error("invalid_argument: a field is malformed (a URL that is not https, an unknown type, a bad position or time)"),
        "401": error("unauthenticated: the x-api-key header is missing, unknown or revoked"),
        "403": error("permission_denied: the key has no admin scope"),
        "404": error("not_found: no such webhook"),
        "412": error("failed_precondition: the key a webhook would deliver for is revoked; no feed position is known for that time; the store is a replica"),
        "429": error("resource_exhausted: over the key's rate limit"),
      },
    },
  };
}

/** What a webhook delivers (OpenAPI 3.1 webhooks): the batch, signed by the Standard Webhooks convention. */
function webhookOperation(doc: Document, payload: DescMessage): object {
  const header = (name: string, description: string) => ({ name, in: "header", required: true, description, schema: { type: "string" } });
  return {
    post: {
      operationId: "deliverEvents",
      tags: ["WebhookService"],
      summary: "A batch of events, delivered to a webhook's URL",
      description:
        "Events in position order, at least once: a batch is sent again (same webhook-id, same body) until a 2xx answer, " +
        "with exponential backoff and jitter, honouring Retry-After, for --webhook-retry-hours (default 24), after which the webhook turns failing. " +
        "410 disables the webhook. Event ids are stable across retries and replays: drop the ones already processed. " +
        "Verify webhook-signature (v1: base64 HMAC-SHA256 keyed by the secret's base64 after whsec_, over webhook-id.webhook-timestamp.body) " +
        "with any Standard Webhooks library; after a secret rotation it carries two signatures for 24 hours.",
      parameters: [
        header("webhook-id", "The batch's id: the same on each of its retries"),
        header("webhook-timestamp", "Epoch seconds of this attempt"),
        header("webhook-signature", "Space-separated v1,<base64> signatures"),
      ],
      requestBody: { required: true, content: { "application/json": { schema: doc.ref(payload) } } },
      responses: {
        "2XX": { description: "Taken: the next batch follows" },
        "410": { description: "Gone: the webhook is disabled" },
        default: { description: "Anything else (or no answer within --webhook-timeout): sent again later" },
      },
    },
  };
}

const plugin: Plugin = {
  name: "protoc-gen-openapi",
  version: "v1",
  run(request) {
    const registry = createFileRegistry(create(FileDescriptorSetSchema, { file: request.protoFile }));
    const services: DescService[] = [];
    for (const name of request.fileToGenerate) {
      const file = registry.getFile(name);
      if (file) services.push(...file.services);
    }
    const routed = services.filter((s) => restRoutes([s]).length > 0 || ndjsonRoutes([s]).length > 0 || sseRoutes([s]).length > 0);
    // Services of this API's package with no REST routes (webhook administration): documented as Connect POSTs.
    const rpcOnly = services.filter((s) => s.typeName.startsWith("marketdata.") && !routed.includes(s));
    const payload = registry.getMessage("marketdata.v1.WebhookPayload");
    return create(CodeGeneratorResponseSchema, {
      supportedFeatures: BigInt(CodeGeneratorResponse_Feature.PROTO3_OPTIONAL),
      file: routed.length === 0 ? [] : [{ name: "openapi.json", content: `${JSON.stringify(openApi(routed, rpcOnly, payload), null, 2)}\n` }],
    });
  },
};

runNodeJs(plugin);
