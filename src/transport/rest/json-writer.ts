import { type DescField, type DescMessage, type Message, ScalarType } from "@bufbuild/protobuf";
import { base64Encode } from "@bufbuild/protobuf/wire";
import { enumName } from "./json-dialect.js";

// The /v1 JSON dialect (decisions.md; json-dialect.ts says what it is),
// compiled per response type at startup into straight-line code, the way
// fast-json-stringify compiles a schema: one generated function per message
// type that concatenates its fields' JSON in declaration order, with field
// names, enum names and the choice of conversion resolved at compile time.
// The generated source holds only identifiers and JSON string literals made
// from descriptor names, never request data.

export type JsonWriter = (message: Message) => string;

const INT64_TYPES = new Set([ScalarType.INT64, ScalarType.UINT64, ScalarType.FIXED64, ScalarType.SFIXED64, ScalarType.SINT64]);

/** Runtime helpers the generated code calls. */
const helpers = {
  str: (v: string) => JSON.stringify(v),
  int64: (v: bigint | number | string) => String(Number(v)),
  dbl: (v: number) => (Number.isFinite(v) ? String(v) : JSON.stringify(String(v))),
  bytes: (v: Uint8Array) => JSON.stringify(base64Encode(v)),
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
    desc.fields.forEach((field, i) => {
      if (field.oneof !== undefined) throw new Error(`${desc.typeName}.${field.name}: oneof fields are not written by the REST writer`);
      const key = `${i === 0 ? "{" : ","}${JSON.stringify(field.jsonName)}:`;
      parts.push(`${JSON.stringify(key)} + ${valueExpr(field, `m[${JSON.stringify(field.localName)}]`)}`);
    });
    sources.push(`function ${name}(m) { return ${parts.length ? parts.join(" + ") : '"{"'} + "}"; }`);
    return name;
  };

  const enumExpr = (field: DescField, v: string): string => {
    const e = field.enum!;
    const table: Record<string, string> = {};
    for (const value of e.values) table[value.number] = JSON.stringify(enumName(e, value.number));
    enumTables.push(table);
    // Unknown numbers stay numbers.
    return `(e${enumTables.length - 1}[${v}] ?? String(${v}))`;
  };

  const scalarExpr = (type: ScalarType, v: string): string => {
    if (INT64_TYPES.has(type)) return `h.int64(${v})`;
    switch (type) {
      case ScalarType.STRING:
        return `h.str(${v})`;
      case ScalarType.BOOL:
        return `(${v} ? "true" : "false")`;
      case ScalarType.DOUBLE:
      case ScalarType.FLOAT:
        return `h.dbl(${v})`;
      case ScalarType.BYTES:
        return `h.bytes(${v})`;
      default:
        return `String(${v})`;
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
        return scalarExpr(field.scalar, v);
      case "enum":
        return enumExpr(field, v);
      case "message":
        return `(${v} === undefined ? "null" : ${writerOf(field.message)}(${v}))`;
      case "list":
        return `("[" + ${v}.map((x) => ${itemExpr(field, "x")}).join(",") + "]")`;
      case "map":
        return `("{" + Object.entries(${v}).map(([k, x]) => JSON.stringify(k) + ":" + ${itemExpr(field, "x")}).join(",") + "}")`;
    }
  };

  const rootName = writerOf(root);
  const enumDecls = enumTables.map((_, i) => `const e${i} = tables[${i}];`).join("\n");
  // eslint-disable-next-line @typescript-eslint/no-implied-eval -- compiled from descriptors, see above
  const factory = new Function("h", "tables", `${enumDecls}\n${sources.join("\n")}\nreturn ${rootName};`);
  return factory(helpers, enumTables) as JsonWriter;
}
