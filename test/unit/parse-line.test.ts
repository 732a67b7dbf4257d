import { describe, expect, it } from "vitest";
import { deepFieldOfText } from "../../src/domain/json-depth.js";
import { MAX_DEPTH, parseLine, TOO_DEEP, tooDeep } from "../../src/domain/kinds/fields.js";

// parseLine refuses a line nested deeper than a record may be from its text,
// before JSON.parse builds it: the same verdict, and the same field, as
// tooDeep gives of the parsed value.

/** A record whose field `name` holds `levels` nested arrays around 1. */
const nested = (name: string, levels: number) => `{"a":"x","${name}":${"[".repeat(levels)}1${"]".repeat(levels)},"z":2}`;

describe("parseLine", () => {
  it("agrees with tooDeep at the bound, and names the field", () => {
    for (const levels of [1, MAX_DEPTH - 1, MAX_DEPTH, MAX_DEPTH + 1, MAX_DEPTH + 2, 50]) {
      const text = nested("deep", levels);
      const parsed = parseLine(text);
      const expected = tooDeep(JSON.parse(text));
      if (expected === undefined) expect(parsed, `${levels} levels`).toEqual({ value: JSON.parse(text) });
      else expect(parsed, `${levels} levels`).toEqual({ invalid: { field: expected, reason: TOO_DEEP } });
    }
    expect(parseLine(nested("deep", MAX_DEPTH + 1)).invalid?.field).toBe("deep");
  });

  it("does not count brackets inside strings, escaped quotes included", () => {
    const inString = `{"a":"x\\"${"[".repeat(100)}","b":"${"{".repeat(100)}\\\\","c":[1]}`;
    expect(parseLine(inString)).toEqual({ value: JSON.parse(inString) });
    expect(deepFieldOfText(inString, 2)).toBeUndefined();
  });

  it("names a field whose key has escapes as the record spells it", () => {
    expect(parseLine(nested("a\\u0041\\\"", 20)).invalid).toEqual({ field: 'aA"', reason: TOO_DEEP });
  });

  it("refuses a million levels without building them; leaves text that is not JSON to JSON.parse", () => {
    const deep = `{"hash":${"[".repeat(1_000_000)}${"]".repeat(1_000_000)}}`;
    expect(parseLine(deep)).toEqual({ invalid: { field: "hash", reason: TOO_DEEP } });
    expect(parseLine("[".repeat(1_000_000))).toEqual({ invalid: { field: "record", reason: TOO_DEEP } });
    expect(parseLine('{"a":"unterminated')).toMatchObject({ invalid: { field: "record", reason: expect.stringMatching(/^is not valid JSON/) } });
    expect(parseLine("{nope}")).toMatchObject({ invalid: { field: "record", reason: expect.stringMatching(/^is not valid JSON/) } });
  });
});
