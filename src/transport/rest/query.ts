import { echo, echoBare } from "../../domain/echo.js";
import { create, type DescField, type DescMessage, type Message, ScalarType } from "@bufbuild/protobuf";
import { Code, ConnectError } from "@connectrpc/connect";
import { shortEnumName } from "../../domain/wire/json-dialect.js";

// Query string → request message, derived from the request descriptor and
// compiled once per method at startup: each parameter name (JSON and proto
// name) maps to a setter that already knows its field's type, range and enum
// values, so a request costs one map lookup and one conversion per parameter.
// Repeated fields take comma-separated lists and repeated keys; enums take
// the short or the full value name. Anything else is invalid_argument.

/** The query as Fastify parses it: repeated keys become arrays. */
export type QueryObject = Record<string, string | string[] | undefined>;

export type QueryParser = (query: QueryObject, pathParams?: Record<string, string>) => Message;

const INT32 = { min: -(2n ** 31n), max: 2n ** 31n - 1n, big: false };
const UINT32 = { min: 0n, max: 2n ** 32n - 1n, big: false };
const INT64 = { min: -(2n ** 63n), max: 2n ** 63n - 1n, big: true };
const UINT64 = { min: 0n, max: 2n ** 64n - 1n, big: true };

const INT_RANGES: Partial<Record<ScalarType, { min: bigint; max: bigint; big: boolean }>> = {
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

const INTEGER_RE = /^-?[0-9]+$/;
/** Safe-integer sized decimals convert without BigInt. */
const SMALL_INTEGER_RE = /^-?[0-9]{1,15}$/;

function invalid(message: string): ConnectError {
  return new ConnectError(message, Code.InvalidArgument);
}

type Convert = (raw: string) => unknown;

/** The converter of one field's values, built once. */
function converter(field: DescField): Convert {
  const param = field.jsonName;
  if (field.enum) {
    const e = field.enum;
    const byName = new Map<string, number>();
    // The zero value means "not set"; naming it is not a valid filter (decisions.md lists the states).
    for (const v of e.values) {
      if (v.number === 0) continue;
      byName.set(v.name, v.number);
      byName.set(shortEnumName(e, v.name), v.number);
    }
    const names = e.values.filter((x) => x.number !== 0).map((x) => shortEnumName(e, x.name)).join(", ");
    // In any case, as addresses and marketplaces are: status=created is CREATED.
    return (raw) => {
      const n = byName.get(raw) ?? byName.get(raw.toUpperCase());
      if (n === undefined) throw invalid(`${param} must be one of ${names}, got ${echo(raw)}`);
      return n;
    };
  }
  const scalar = field.scalar ?? ScalarType.STRING;
  const range = INT_RANGES[scalar];
  if (range) {
    const minN = Number(range.min);
    const maxN = Number(range.max);
    return (raw) => {
      if (SMALL_INTEGER_RE.test(raw)) {
        const n = Number(raw);
        if (n < minN || n > maxN) throw invalid(`${param} is out of range, got ${echoBare(raw)}`);
        return range.big ? BigInt(n) : n;
      }
      if (!INTEGER_RE.test(raw)) throw invalid(`${param} must be an integer, got ${echo(raw)}`);
      const n = BigInt(raw);
      if (n < range.min || n > range.max) throw invalid(`${param} is out of range, got ${echoBare(raw)}`);
      return range.big ? n : Number(n);
    };
  }
  switch (scalar) {
    case ScalarType.BOOL:
      return (raw) => {
        if (raw === "true" || raw === "false") return raw === "true";
        throw invalid(`${param} must be true or false, got ${echo(raw)}`);
      };
    case ScalarType.DOUBLE:
    case ScalarType.FLOAT:
      return (raw) => {
        const n = Number(raw);
        if (raw.trim() === "" || Number.isNaN(n)) throw invalid(`${param} must be a number, got ${echo(raw)}`);
        return n;
      };
    case ScalarType.BYTES:
      return (raw) => Buffer.from(raw, "base64url");
    default:
      return (raw) => raw;
  }
}

type Setter = (message: Record<string, unknown>, values: string | string[], seen: Set<string>) => void;

function setter(field: DescField): Setter {
  const convert = converter(field);
  const name = field.localName;
  if (field.fieldKind === "list") {
    return (m, values) => {
      const list = m[name] as unknown[];
      for (const value of typeof values === "string" ? [values] : values) {
        for (const part of value.split(",")) list.push(convert(part));
      }
    };
  }
  // ListSales' asset_id is one string that takes a comma-separated list (a repeated field would break its
  // JSON callers): repeated keys are that list too, as they are for the repeated asset_id of the other lists.
  if (field.parent.typeName === "marketdata.v1.ListSalesRequest" && field.name === "asset_id") {
    return (m, values) => {
      const list = typeof values === "string" ? [values] : values;
      m[name] = [...(m[name] === "" ? [] : [m[name] as string]), ...list].join(",");
    };
  }
  return (m, values, seen) => {
    if (typeof values !== "string" || seen.has(name)) throw invalid(`${field.jsonName} must be given at most once`);
    seen.add(name);
    m[name] = convert(values);
  };
}

/**
 * Compiles the parser of one request type (throws at startup on unsupported
 * fields). `body`: a field the request's body fills (a POST rule's), not a
 * query parameter.
 */
export function compileQueryParser(desc: DescMessage, body?: DescField): QueryParser {
  const setters = new Map<string, Setter>();
  const params = desc.fields.filter((f) => f !== body);
  for (const field of params) {
    if (field.fieldKind === "message" || field.fieldKind === "map" || (field.fieldKind === "list" && field.listKind === "message")) {
      throw new Error(`${desc.typeName}.${field.name}: message and map fields cannot be query parameters`);
    }
    if (field.oneof !== undefined) throw new Error(`${desc.typeName}.${field.name}: oneof fields are not served as query parameters`);
    const set = setter(field);
    setters.set(field.jsonName, set);
    setters.set(field.name, set);
  }
  const accepted = params.map((f) => f.jsonName).join(", ");
  return (query, pathParams) => {
    const message = create(desc) as unknown as Record<string, unknown>;
    const seen = new Set<string>();
    const apply = (key: string, values: string | string[] | undefined) => {
      if (values === undefined) return;
      const set = setters.get(key);
      if (!set) throw invalid(`unknown query parameter ${echo(key)}; accepted: ${accepted}`);
      set(message, values, seen);
    };
    if (pathParams) for (const key in pathParams) apply(key, pathParams[key]);
    for (const key in query) apply(key, query[key]);
    return message as unknown as Message;
  };
}
