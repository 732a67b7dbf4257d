import { create, type DescField, type DescMessage, type Message, ScalarType } from "@bufbuild/protobuf";
import { reflect } from "@bufbuild/protobuf/reflect";
import { Code, ConnectError } from "@connectrpc/connect";
import { shortEnumName } from "./json-dialect.js";

// Query string → request message, derived from the request descriptor:
// parameters match fields by JSON name (proto name also accepted); repeated
// fields take comma-separated lists and repeated keys; enums take the short
// or the full value name. Anything else is invalid_argument.

const INT32 = { min: -(2n ** 31n), max: 2n ** 31n - 1n };
const UINT32 = { min: 0n, max: 2n ** 32n - 1n };
const INT64 = { min: -(2n ** 63n), max: 2n ** 63n - 1n };
const UINT64 = { min: 0n, max: 2n ** 64n - 1n };

const INT_RANGES: Partial<Record<ScalarType, { min: bigint; max: bigint }>> = {
  [ScalarType.INT32]: INT32,
  [ScalarType.SINT32]: INT32,
  [ScalarType.SFIXED32]: INT32,
  [ScalarType.UINT32]: UINT32,
  [ScalarType.FIXED32]: UINT32,
  [ScalarType.INT64]: INT64,
  [ScalarType.SINT64]: INT64,
  [ScalarType.SFIXED64]: INT64,
  [ScalarType.UINT64]: UINT64,
  [ScalarType.FIXED64]: UINT64,
};

/** The query parameters of a request type: JSON and proto names → field. */
export function queryFields(desc: DescMessage): Map<string, DescField> {
  const byName = new Map<string, DescField>();
  for (const field of desc.fields) {
    if (field.fieldKind === "message" || field.fieldKind === "map" || (field.fieldKind === "list" && field.listKind === "message")) {
      throw new Error(`${desc.typeName}.${field.name}: message and map fields cannot be query parameters`);
    }
    byName.set(field.jsonName, field);
    byName.set(field.name, field);
  }
  return byName;
}

function invalid(message: string): ConnectError {
  return new ConnectError(message, Code.InvalidArgument);
}

/** Builds the request message from query pairs (and path variables, if any). */
export function parseQuery<Desc extends DescMessage>(
  desc: Desc,
  fields: Map<string, DescField>,
  pairs: Iterable<[string, string]>,
): Message {
  const message = create(desc);
  const r = reflect(desc, message);
  const seen = new Set<DescField>();
  for (const [key, raw] of pairs) {
    const field = fields.get(key);
    if (!field) {
      const accepted = desc.fields.map((f) => f.jsonName).join(", ");
      throw invalid(`unknown query parameter ${JSON.stringify(key)}; accepted: ${accepted}`);
    }
    if (field.fieldKind === "list") {
      const list = r.get(field);
      for (const part of raw.split(",")) list.add(parseValue(field, part));
      continue;
    }
    if (seen.has(field)) throw invalid(`${field.jsonName} must be given at most once`);
    seen.add(field);
    r.set(field, parseValue(field, raw));
  }
  return message;
}

function parseValue(field: DescField, raw: string): unknown {
  const param = field.jsonName;
  if (field.enum) {
    const e = field.enum;
    const v = e.values.find((x) => x.name === raw || shortEnumName(e, x.name) === raw);
    if (!v) {
      const names = e.values.filter((x) => x.number !== 0).map((x) => shortEnumName(e, x.name));
      throw invalid(`${param} must be one of ${names.join(", ")}, got ${JSON.stringify(raw)}`);
    }
    return v.number;
  }
  const scalar = field.scalar ?? ScalarType.STRING;
  const range = INT_RANGES[scalar];
  if (range) {
    if (!/^-?[0-9]+$/.test(raw)) throw invalid(`${param} must be an integer, got ${JSON.stringify(raw)}`);
    const n = BigInt(raw);
    if (n < range.min || n > range.max) {
      throw invalid(`${param} is out of range, got ${raw}`);
    }
    return range === INT64 || range === UINT64 ? n : Number(n);
  }
  switch (scalar) {
    case ScalarType.BOOL:
      if (raw === "true" || raw === "false") return raw === "true";
      throw invalid(`${param} must be true or false, got ${JSON.stringify(raw)}`);
    case ScalarType.DOUBLE:
    case ScalarType.FLOAT: {
      const n = Number(raw);
      if (raw.trim() === "" || Number.isNaN(n)) throw invalid(`${param} must be a number, got ${JSON.stringify(raw)}`);
      return n;
    }
    case ScalarType.BYTES:
      return Buffer.from(raw, "base64url");
    default:
      return raw;
  }
}
