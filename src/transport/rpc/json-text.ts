import { deepFieldOfText } from "../../domain/json-depth.js";

// The text of a JSON request message (Connect, gRPC-Web JSON, Connect GET
// with encoding=json), before protobuf-es parses it: UTF-8 or refused (a
// lenient decoder would store U+FFFD for the broken bytes), and nested no
// deeper than any message of the contract can be, found from the text (a
// 4 MB body of brackets held the event loop over a second in JSON.parse).

/**
 * Deeper than any request of the contract: a batch (1), its records (2),
 * a record (3), and a record's own nesting, at most 8 (domain/kinds/fields.ts
 * MAX_DEPTH), with room to spare.
 */
export const MAX_JSON_MESSAGE_DEPTH = 16;

const utf8 = new TextDecoder("utf-8", { fatal: true });

/** A decoder for connect's `jsonOptions.textDecoder`: what it throws is the caller's invalid_argument. */
export const jsonMessageText = {
  decode(data: Uint8Array): string {
    const text = utf8.decode(data);
    const deep = deepFieldOfText(text, MAX_JSON_MESSAGE_DEPTH);
    if (deep !== undefined) throw new Error(`the JSON message nests deeper than ${MAX_JSON_MESSAGE_DEPTH} levels (in ${JSON.stringify(deep.slice(0, 100))})`);
    return text;
  },
};
