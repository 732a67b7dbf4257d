import type http from "node:http";
import type http2 from "node:http2";
import type { DescMethodServerStreaming, Message } from "@bufbuild/protobuf";
import { type ConnectError, createContextValues, createHandlerContext } from "@connectrpc/connect";
import type { ServiceSet } from "../../service/services.js";
import { streamCaller } from "../../service/watch.js";
import { type Admission, rateLimitHeaders } from "../policy/admission.js";
import { type ErrorLogger, publicError } from "../policy/guards.js";
import type { HoldKey } from "../policy/held-keys.js";

// The one path of a server-streaming read (the live feeds), whatever
// protocol carries it, as unary/pipeline.ts is for unary reads:
//
//   admit -> decode -> call -> first message -> head -> messages ... -> end
//
// A codec per protocol (rest/sse.ts: Server-Sent Events; rpc/grpc-stream.ts:
// gRPC) says how the request is decoded, how each message and the end are
// written, and how an error before the stream started is answered. Every
// message waits for the peer to take the one before (backpressure: a
// subscriber that does not read falls behind in the feed, where it is ended
// as too slow, never in this process's buffers), and a write the peer has
// not taken within `stallMs` (a dead peer) ends the connection.
// Connect and gRPC-Web streams go through connect-node, which the e2e suite
// holds to the same expectations.

type AnyRequest = http.IncomingMessage | http2.Http2ServerRequest;
type AnyResponse = http.ServerResponse | http2.Http2ServerResponse;

export interface StreamCodec<In> {
  /** The request message; throws (or rejects with) a ConnectError for the caller's mistakes. */
  decode(input: In): Message | Promise<Message>;
  /** The headers of a stream that starts. */
  readonly headers: Record<string, string>;
  /** The bytes of one message; `first` is the stream's opening message. */
  message(m: Message, first: boolean): string | Uint8Array;
  /** Ends a started stream: cleanly (`error` undefined) or with `error`, in the protocol's form. */
  finish(res: AnyResponse, error: ConnectError | undefined): void;
  /** Answers `error` before anything was sent, in the protocol's error form. */
  fail(res: AnyResponse, error: ConnectError, headers: Record<string, string>): void;
}

/** One server-streaming call on one transport. */
export interface StreamCall<In> {
  req: AnyRequest;
  res: AnyResponse;
  apiKey: string | undefined;
  /** The client address's rate-limit bucket. */
  bucket: string;
  log: ErrorLogger;
  /** What the protocol carried, read once the call is admitted. */
  input(): In | Promise<In>;
}

export interface StreamDeps {
  services: ServiceSet;
  admission: Admission;
  /** How long a write may wait for the peer to take it before the peer is taken as dead. */
  stallMs: number;
  /** Holds the stream's key while it is open: a revoked key ends it. */
  holdKey: HoldKey;
}

export type StreamPipeline<In> = (call: StreamCall<In>) => Promise<void>;

/** What a stream has sent so far. */
export interface StreamOutcome {
  messages: number;
  /** The server ended it (its end, or an error before it started); false while open, or when the client went away first. */
  ended?: boolean;
}

/**
 * The outcome of each stream, by its request: read by the request's log
 * line and metrics (transport/entry.ts) when its response closes, however
 * it ends (the client may just go away). Set by this pipeline (SSE, gRPC)
 * and by the counting interceptor of connect-node's streams (rpc/interceptors.ts).
 */
export const streamOutcomes = new WeakMap<object, StreamOutcome>();

export function compileStream<In>(deps: StreamDeps, method: DescMethodServerStreaming, codec: StreamCodec<In>): StreamPipeline<In> {
  const impl = deps.services.serverStream(method);
  const procedure = `/${method.parent.typeName}/${method.name}`;
  return async (call) => {
    const { req, res } = call;
    const outcome: StreamOutcome = { messages: 0, ended: false };
    streamOutcomes.set(req, outcome);
    const abort = new AbortController();
    const stop = () => abort.abort();
    res.once("close", stop);
    let headers: Record<string, string> = {};
    let stream: AsyncIterator<Message>;
    let first: IteratorResult<Message>;
    let release = () => {};
    try {
      const admitted = await deps.admission.admit(call.apiKey, call.bucket);
      headers = rateLimitHeaders(admitted.rate);
      if (admitted.error !== undefined) throw admitted.error;
      if (admitted.grant !== undefined && call.apiKey !== undefined) release = deps.holdKey(call.apiKey, admitted.grant);
      const input = await codec.decode(await call.input());
      const context = createHandlerContext({
        service: method.parent,
        method,
        protocolName: "stream",
        requestMethod: req.method ?? "GET",
        url: req.url ?? "",
        requestSignal: abort.signal,
        contextValues: createContextValues().set(streamCaller, admitted.grant?.id),
      });
      stream = impl(input, context)[Symbol.asyncIterator]();
      first = await stream.next();
    } catch (err) {
      release();
      res.off("close", stop);
      outcome.ended = !res.destroyed;
      codec.fail(res, publicError(err, call.log, procedure), headers);
      if (!req.readableEnded) req.resume();
      return;
    }
    res.writeHead(200, { ...headers, ...codec.headers });
    let error: ConnectError | undefined;
    try {
      for (let next = first, opening = true; next.done !== true; next = await stream.next(), opening = false) {
        await write(res, codec.message(next.value, opening), deps.stallMs, stop);
        outcome.messages++;
      }
    } catch (err) {
      if (!abort.signal.aborted) error = publicError(err, call.log, procedure);
    } finally {
      release();
      res.off("close", stop);
      abort.abort();
      await stream.return?.().catch(() => {});
    }
    if (res.destroyed) return;
    outcome.ended = true;
    codec.finish(res, error);
    // The end waits in the buffers of a peer that stopped reading: it has as long as a write.
    const timer = setTimeout(() => res.destroy(), deps.stallMs);
    res.once("close", () => clearTimeout(timer));
    res.once("finish", () => clearTimeout(timer));
  };
}

/** Writes with backpressure; rejects once the response closed, or `stallMs` passed without the peer taking the bytes. */
async function write(res: AnyResponse, bytes: string | Uint8Array, stallMs: number, onStall: () => void): Promise<void> {
  if (res.destroyed) throw new Error("closed");
  // Both response kinds write alike; TypeScript cannot call a union of their overloads.
  if ((res as http.ServerResponse).write(bytes)) return;
  await new Promise<void>((resolve, reject) => {
    const done = (err?: Error) => {
      clearTimeout(timer);
      res.off("drain", onDrain);
      res.off("close", onClose);
      if (err === undefined) resolve();
      else reject(err);
    };
    const onDrain = () => done();
    const onClose = () => done(new Error("closed"));
    const timer = setTimeout(() => {
      onStall();
      res.destroy();
      done(new Error("stalled"));
    }, stallMs);
    res.on("drain", onDrain);
    res.on("close", onClose);
  });
}
