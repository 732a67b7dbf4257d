import { type DescField, type DescMessage, type Message, ScalarType } from "@bufbuild/protobuf";
import { FeatureSet_FieldPresence } from "@bufbuild/protobuf/wkt";

// Protobuf binary of the records whose answers the store keeps with each
// row (fragments.ts), compiled per message type into straight-line code the
// way json-writer.ts compiles /v1 JSON: toBinary walks a message by
// reflection through a BinaryWriter, which every import and ingest would pay
// per row; this writes the same bytes in a tenth of the time.
// It takes the field kinds those records have (scalars, enums, singular
// messages) and refuses others when compiled; the fragments test holds
// its bytes equal to toBinary's.

export type BinaryWriterFn = (message: Message) => Uint8Array;

/** Bytes being written: one scratch buffer per process, grown as needed, copied out per message. */
class Out {
  buf = Buffer.allocUnsafe(16 * 1024);
  pos = 0;

  room(n: number): void {
    if (this.pos + n <= this.buf.length) return;
    const bigger = Buffer.allocUnsafe(Math.max(this.buf.length * 2, this.pos + n));
    this.buf.copy(bigger, 0, 0, this.pos);
    this.buf = bigger;
  }

  varint(v: number): void {
    this.room(10);
    while (v > 0x7f) {
      this.buf[this.pos++] = (v & 0x7f) | 0x80;
      v = Math.floor(v / 128);
    }
    this.buf[this.pos++] = v;
  }

  /** A 64-bit value as a varint: negative numbers as their two's complement (ten bytes). */
  varint64(v: bigint | number): void {
    if (typeof v === "number" ? v >= 0 && v <= Number.MAX_SAFE_INTEGER : v >= 0n && v <= MAX_SAFE) return this.varint(Number(v));
    let u = BigInt.asUintN(64, BigInt(v));
    this.room(10);
    while (u > 0x7fn) {
      this.buf[this.pos++] = Number(u & 0x7fn) | 0x80;
      u >>= 7n;
    }
    this.buf[this.pos++] = Number(u);
  }

  string(s: string): void {
    // Short ASCII text (hashes, addresses, amounts, names) copied by hand:
    // Buffer.write's own cost is most of such a field's.
    if (s.length < 128) {
      this.room(1 + s.length);
      const buf = this.buf;
      let p = this.pos + 1;
      let i = 0;
      for (; i < s.length; i++) {
        const c = s.charCodeAt(i);
        if (c >= 0x80) break;
        buf[p++] = c;
      }
      if (i === s.length) {
        buf[this.pos] = s.length;
        this.pos = p;
        return;
      }
    }
    // UTF-8 takes at most three bytes per UTF-16 unit.
    const max = s.length * 3;
    if (max < 128) {
      this.room(1 + max);
      const n = this.buf.write(s, this.pos + 1, "utf8");
      this.buf[this.pos] = n;
      this.pos += 1 + n;
      return;
    }
    const n = Buffer.byteLength(s, "utf8");
    this.varint(n);
    this.room(n);
    this.pos += this.buf.write(s, this.pos, "utf8");
  }

  bytes(b: Uint8Array): void {
    this.varint(b.length);
    this.room(b.length);
    this.buf.set(b, this.pos);
    this.pos += b.length;
  }

  double(v: number): void {
    this.room(8);
    this.pos = this.buf.writeDoubleLE(v, this.pos);
  }

  float(v: number): void {
    this.room(4);
    this.pos = this.buf.writeFloatLE(v, this.pos);
  }

  /** A nested message: its body written by `write` after a length prefix, moved if the length needs more than one byte. */
  nested(write: () => void): void {
    this.room(1);
    const at = this.pos++;
    write();
    const n = this.pos - at - 1;
    if (n < 128) {
      this.buf[at] = n;
      return;
    }
    let extra = 0;
    for (let v = n; v > 0x7f; v = Math.floor(v / 128)) extra++;
    this.room(extra);
    this.buf.copyWithin(at + 1 + extra, at + 1, this.pos);
    const end = this.pos + extra;
    this.pos = at;
    this.varint(n);
    this.pos = end;
  }
}

const MAX_SAFE = BigInt(Number.MAX_SAFE_INTEGER);

const out = new Out();

const INT64 = new Set([ScalarType.INT64, ScalarType.UINT64]);
const INT32 = new Set([ScalarType.INT32, ScalarType.UINT32]);

export function compileBinaryWriter(root: DescMessage): BinaryWriterFn {
  const fnName = new Map<string, string>();
  const sources: string[] = [];

  const writerOf = (desc: DescMessage): string => {
    let name = fnName.get(desc.typeName);
    if (name !== undefined) return name;
    name = `b${fnName.size}`;
    fnName.set(desc.typeName, name);
    // In field number order, as toBinary writes them (a field declared out of its number's place, a listing's maker, writes where its number says).
    sources.push(`function ${name}(m) { let v; ${[...desc.fields].sort((a, b) => a.number - b.number).map(fieldCode).join(" ")} }`);
    return name;
  };

  const fieldCode = (field: DescField): string => {
    if (field.oneof !== undefined) throw new Error(`${field.parent.typeName}.${field.name}: oneof fields are not written by the binary writer`);
    const get = `v = m[${JSON.stringify(field.localName)}];`;
    const tag = (wireType: number) => `o.varint(${(field.number << 3) | wireType});`;
    const explicit = field.presence === FeatureSet_FieldPresence.EXPLICIT;
    switch (field.fieldKind) {
      case "message":
        return `${get} if (v !== undefined) { ${tag(2)} o.nested(() => ${writerOf(field.message)}(v)); }`;
      case "enum":
        return `${get} if (${explicit ? "v !== undefined" : "v !== 0"}) { ${tag(0)} o.varint64(v); }`;
      case "scalar": {
        const [wireType, unset, write] = scalarCode(field.scalar);
        return `${get} if (${explicit ? "v !== undefined" : unset}) { ${tag(wireType)} ${write} }`;
      }
      case "list":
        // Strings and messages: one tagged element each (proto3 packs only numbers, which no answer repeats).
        if (field.listKind === "message") return `${get} for (const x of v) { ${tag(2)} o.nested(() => ${writerOf(field.message)}(x)); }`;
        if (field.listKind === "scalar" && field.scalar === ScalarType.STRING) return `${get} for (const x of v) { ${tag(2)} o.string(x); }`;
        throw new Error(`${field.parent.typeName}.${field.name}: lists of numbers and enums are not written by the binary writer`);
      default:
        throw new Error(`${field.parent.typeName}.${field.name}: ${field.fieldKind} fields are not written by the binary writer`);
    }
  };

  const scalarCode = (type: ScalarType): [number, string, string] => {
    if (type === ScalarType.STRING) return [2, `v !== ""`, "o.string(v);"];
    if (type === ScalarType.BYTES) return [2, "v.length !== 0", "o.bytes(v);"];
    if (type === ScalarType.BOOL) return [0, "v", "o.varint(1);"];
    if (type === ScalarType.DOUBLE) return [1, "v !== 0", "o.double(v);"];
    if (type === ScalarType.FLOAT) return [5, "v !== 0", "o.float(v);"];
    if (INT64.has(type)) return [0, "v != 0", "o.varint64(v);"];
    if (INT32.has(type)) return [0, "v !== 0", "o.varint64(v);"];
    throw new Error(`scalar type ${ScalarType[type]} is not written by the binary writer`);
  };

  const rootName = writerOf(root);
  // eslint-disable-next-line @typescript-eslint/no-implied-eval -- compiled from descriptors: only identifiers, numbers and JSON string literals of field names
  const write = new Function("o", `${sources.join("\n")}\nreturn ${rootName};`)(out) as (m: Message) => void;
  return (message) => {
    out.pos = 0;
    write(message);
    return Uint8Array.prototype.slice.call(out.buf, 0, out.pos);
  };
}
