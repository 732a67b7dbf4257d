import type http from "node:http";
import type http2 from "node:http2";

// One bound on request URLs for every protocol, checked before routing or
// parsing. HTTP/1.1 requests are already bounded by Node's 16 KB header
// limit (431), but HTTP/2 paths may be about 60 KB; no valid request here
// needs more than a few KB. A GET past the bound is answered 414 in the
// family's error form (REST's success flag included); an RPC POST with such
// a path names no procedure and is answered 404 by the RPC gate.

/** The longest URL any GET route takes (414 past it): the longest valid request is under 3 KB. */
export const MAX_URL_BYTES = 8192;

type AnyRequest = http.IncomingMessage | http2.Http2ServerRequest;
type AnyResponse = http.ServerResponse | http2.Http2ServerResponse;

/**
 * Answers a GET or HEAD whose URL is longer than MAX_URL_BYTES and returns
 * true; false (nothing written) otherwise. `flags`: each /v1 path's success
 * flag field (rest/transcoder.ts successFlags).
 */
export function refuseLongUrl(req: AnyRequest, res: AnyResponse, flags: ReadonlyMap<string, string>): boolean {
  const url = req.url ?? "";
  if (url.length <= MAX_URL_BYTES || (req.method !== "GET" && req.method !== "HEAD")) return false;
  const query = url.indexOf("?");
  const flag = flags.get(query < 0 ? url : url.slice(0, query));
  const body = JSON.stringify({
    ...(flag === undefined ? {} : { [flag]: 0 }),
    code: "invalid_argument",
    message: `request URL longer than ${MAX_URL_BYTES} bytes`,
  });
  res.writeHead(414, { "content-type": "application/json; charset=utf-8", "content-length": Buffer.byteLength(body) });
  if (req.method === "HEAD") res.end();
  else res.end(body);
  return true;
}
