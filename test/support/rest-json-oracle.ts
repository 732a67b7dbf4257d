import {
  type DescField,
  type DescMessage,
  type Message,
  type MessageShape,
  ScalarType,
} from "@bufbuild/protobuf";
import { isReflectMessage, reflect, type ReflectMessage } from "@bufbuild/protobuf/reflect";
import { base64Encode } from "@bufbuild/protobuf/wire";
import { FeatureSet_FieldPresence } from "@bufbuild/protobuf/wkt";
import { enumName, onlyWhenAsked } from "../../src/domain/wire/json-dialect.js";

// The /v1 JSON dialect by reflection, as the server wrote it before its
// writer was compiled: the oracle the compiled writer must equal. From
// descriptors alone:
// lowerCamelCase names; every field present, defaults included; 64-bit
// integers as JSON numbers; enum values without their shared prefix; unset
// singular message fields as null; a field only a parameter's answer
// carries left out when not set.

export type JsonValue = null | boolean | number | string | JsonValue[] | { [k: string]: JsonValue };

export function toRestJson(desc: DescMessage, message: Message): { [k: string]: JsonValue } {
  return writeMessage(reflect(desc, message as MessageShape<DescMessage>));
}

function writeMessage(r: ReflectMessage): { [k: string]: JsonValue } {
  const out: { [k: string]: JsonValue } = {};
  for (const field of r.fields) {
    if (onlyWhenAsked(field) && !r.isSet(field)) continue;
    out[field.jsonName] = writeField(r, field);
  }
  return out;
}

function writeField(r: ReflectMessage, field: DescField): JsonValue {
  switch (field.fieldKind) {
    case "scalar":
      // A proto3 `optional` scalar: null when not set.
      return field.presence === FeatureSet_FieldPresence.EXPLICIT && !r.isSet(field) ? null : writeScalar(field.scalar, r.get(field));
    case "enum":
      return enumName(field.enum, r.get(field));
    case "message":
      return r.isSet(field) ? writeMessage(r.get(field)) : null;
    case "list": {
      const out: JsonValue[] = [];
      for (const item of r.get(field)) out.push(writeItem(field, item));
      return out;
    }
    case "map": {
      const out: { [k: string]: JsonValue } = {};
      for (const [key, value] of r.get(field)) out[String(key)] = writeItem(field, value);
      return out;
    }
  }
}

function writeItem(field: DescField & { fieldKind: "list" | "map" }, item: unknown): JsonValue {
  if (isReflectMessage(item)) return writeMessage(item);
  if (field.enum !== undefined) return enumName(field.enum, item as number);
  return writeScalar(field.scalar ?? ScalarType.STRING, item);
}

function writeScalar(type: ScalarType, value: unknown): JsonValue {
  switch (type) {
    case ScalarType.INT64:
    case ScalarType.UINT64:
    case ScalarType.FIXED64:
    case ScalarType.SFIXED64:
    case ScalarType.SINT64:
      return Number(value);
    case ScalarType.BYTES:
      return base64Encode(value as Uint8Array);
    case ScalarType.FLOAT:
    case ScalarType.DOUBLE:
      // JSON has no NaN or Infinity; protobuf JSON writes them as strings.
      return Number.isFinite(value) ? (value as number) : String(value);
    default:
      return value as JsonValue;
  }
}

