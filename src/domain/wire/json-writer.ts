import { type DescField, type DescMessage, type Message, ScalarType } from "@bufbuild/protobuf";
import { base64Encode } from "@bufbuild/protobuf/wire";
import { FeatureSet_FieldPresence } from "@bufbuild/protobuf/wkt";
import { enumName, onlyWhenAsked } from "./json-dialect.js";

// The /v1 JSON dialect (decisions.md; json-dialect.ts says what it is),
// compiled per response type at startup into straight-line code, the way
// fast-json-stringify compiles a schema: one generated function per message
// type that builds a plain object of its fields in declaration order, with
// field names, enum names and the choice of conversion resolved at compile
// time, then one JSON.stringify of the whole (on a page of sales, about half
// the time of concatenating each field's JSON text).
// The generated source holds only identifiers and JSON string literals made
// from descriptor names, never request data.

export type JsonWriter = (message: Message) => string;

const INT64_TYPES = new Set([ScalarType.INT64, ScalarType.UINT64, ScalarType.FIXED64, ScalarType.SFIXED64, ScalarType.SINT64]);

/** Runtime helpers the generated code calls. */
const helpers = {
  // JSON has no NaN or Infinity; protobuf JSON writes them as strings.
  dbl: (v: number) => (Number.isFinite(v) ? v : String(v)),
  bytes: (v: Uint8Array) => base64Encode(v),
};

export function compileJsonWriter(root: DescMessage): JsonWriter {
  const fnName = new Map<string, string>();
  const enumTables: Record<string, string>[] = [];
  const sources: string[] = [];

  const writerOf = (desc: DescMessage): string => {
    let name = fnName.get(desc.typeName);
    if (name !== undefined) return name;
    name = `w${fnName.size}`;
    fnName.set(desc.typeName, name);
    const parts: string[] = [];
    for (const field of desc.fields) {
      if (field.oneof !== undefined) throw new Error(`${desc.typeName}.${field.name}: oneof fields are not written by the REST writer`);
      parts.push(`${JSON.stringify(field.jsonName)}: ${valueExpr(field, `m[${JSON.stringify(field.localName)}]`)}`);
    }
    sources.push(`function ${name}(m) { return { ${parts.join(", ")} }; }`);
    return name;
  };

  const enumExpr = (field: DescField, v: string): string => {
    const e = field.enum!;
    const table: Record<string, string> = {};
    for (const value of e.values) table[value.number] = String(enumName(e, value.number));
    enumTables.push(table);
    // Unknown numbers stay numbers.
    return `(e${enumTables.length - 1}[${v}] ?? ${v})`;
  };

  const scalarExpr = (type: ScalarType, v: string): string => {
    if (INT64_TYPES.has(type)) return `Number(${v})`;
    switch (type) {
      case ScalarType.DOUBLE:
      case ScalarType.FLOAT:
        return `h.dbl(${v})`;
      case ScalarType.BYTES:
        return `h.bytes(${v})`;
      default:
        return v;
    }
  };

  const itemExpr = (field: DescField, v: string): string => {
    if (field.message) return `${writerOf(field.message)}(${v})`;
    if (field.enum) return enumExpr(field, v);
    return scalarExpr(field.scalar ?? ScalarType.STRING, v);
  };

  const valueExpr = (field: DescField, v: string): string => {
    switch (field.fieldKind) {
      case "scalar":
        // A proto3 `optional` scalar not set is null, as an unset message is;
        // one answered only when a parameter asks for it is left out (JSON.stringify drops undefined).
        if (field.presence !== FeatureSet_FieldPresence.EXPLICIT) return scalarExpr(field.scalar, v);
        return `(${v} === undefined ? ${onlyWhenAsked(field) ? "undefined" : "null"} : ${scalarExpr(field.scalar, v)})`;
      case "enum":
        return enumExpr(field, v);
      case "message":
        return `(${v} === undefined ? null : ${writerOf(field.message)}(${v}))`;
      case "list":
        return `${v}.map((x) => ${itemExpr(field, "x")})`;
      case "map":
        return `Object.fromEntries(Object.entries(${v}).map(([k, x]) => [k, ${itemExpr(field, "x")}]))`;
    }
  };

  const rootName = writerOf(root);
  const enumDecls = enumTables.map((_, i) => `const e${i} = tables[${i}];`).join("\n");
  // eslint-disable-next-line @typescript-eslint/no-implied-eval -- compiled from descriptors, see above
  const factory = new Function("h", "tables", `${enumDecls}\n${sources.join("\n")}\nreturn ${rootName};`);
  const build = factory(helpers, enumTables) as (m: Message) => unknown;
  return (message) => JSON.stringify(build(message));
}
