import type { DescField, Message } from "@bufbuild/protobuf";
import type { HandlerContext } from "@connectrpc/connect";
import { type Fragment, type WireForm, withWireRows } from "../domain/wire/fragments.js";

// What an in-process call (transport/unary/pipeline.ts) tells a method
// beyond its request: the form its codec writes, when that codec splices
// ready list rows (domain/wire/fragments.ts). A call through a Connect
// router passes its HandlerContext instead, and gets whole messages.

export interface LocalCall {
  readonly wire: WireForm;
}

/** The form to read a list's ready rows in, or undefined for whole messages. */
export function wireForm(call: HandlerContext | LocalCall | undefined): WireForm | undefined {
  return call !== undefined && "wire" in call ? call.wire : undefined;
}

/**
 * A list's answer in the form the call takes: `message` with its ready rows
 * (read in `wire`) for the codec to splice, or with `rows` made messages by
 * `toMessage`. The one place a service tells the two apart: each list reads
 * once (its port takes the form) and answers here.
 */
export function listAnswer<M extends Message, R>(
  message: M,
  field: DescField,
  wire: WireForm | undefined,
  rows: readonly (R | Fragment)[],
  toMessage: (row: R) => unknown,
): M {
  if (wire !== undefined) return withWireRows(message, field, wire, rows as Fragment[]);
  (message as unknown as Record<string, unknown>)[field.localName] = (rows as readonly R[]).map(toMessage);
  return message;
}
