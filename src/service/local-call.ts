import type { HandlerContext } from "@connectrpc/connect";
import type { WireForm } from "../domain/wire/fragments.js";

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
