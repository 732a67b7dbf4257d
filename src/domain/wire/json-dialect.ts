import type { DescEnum } from "@bufbuild/protobuf";

// The /v1 JSON dialect (decisions.md): lowerCamelCase names; every field
// present, defaults included; 64-bit integers as JSON numbers; enum values
// without their shared prefix; unset singular message fields as null.
// json-writer.ts compiles it per message type; the reflective reference that
// tests compare against is test/support/rest-json-oracle.ts.

/** `LISTING_STATUS_CREATED` → `CREATED`; unknown numbers stay numbers. */
export function enumName(desc: DescEnum, value: number): string | number {
  const v = desc.values.find((x) => x.number === value);
  return v ? shortEnumName(desc, v.name) : value;
}

export function shortEnumName(desc: DescEnum, name: string): string {
  const prefix = desc.sharedPrefix?.toUpperCase();
  return prefix && name.startsWith(prefix) ? name.slice(prefix.length) : name;
}
